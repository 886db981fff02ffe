import { createFileObjectStore } from "./file-object-store.js";
import { parseLakeUrl } from "./lake-url.js";
import type { ObjectStore, ObjectStoreOptions } from "./object-store-types.js";
import { createS3ObjectStore } from "./s3-object-store.js";

export type { ListPage, ObjectBody, ObjectEntry, ObjectStore, ObjectStoreOptions } from "./object-store-types.js";

/** An object store for a lake URL. Nothing connects until the first request. */
export function createObjectStore(options: ObjectStoreOptions): ObjectStore {
  const location = parseLakeUrl(options.url);
  if (location.kind === "file") return createFileObjectStore({ directory: location.directory });
  return createS3ObjectStore({ ...options, bucket: location.bucket });
}
