import type { AddressGuard } from "../outbound/address-guard.js";
import { guardedLookup } from "../outbound/guarded-lookup.js";
import { createFileObjectStore } from "./file-object-store.js";
import { parseLakeUrl } from "./lake-url.js";
import type { ObjectStore, ObjectStoreOptions } from "./object-store-types.js";

export type { ListPage, ObjectBody, ObjectEntry, ObjectStore, ObjectStoreOptions } from "./object-store-types.js";

/** Where a lake's files are, as its destination's settings say ("" for what is not set). */
export interface LakeStoreSettings {
  url: string;
  endpoint?: string | undefined;
  region?: string | undefined;
  accessKeyId?: string | undefined;
  secretAccessKey?: string | undefined;
}

/**
 * A lake destination's store, for whatever reads or writes its files (its
 * flushes, a replay, a deletion): the endpoint's name resolved through the
 * outbound address guard, so every address it resolves to is held to the
 * rules a webhook URL is; no guard: resolved as is (tests).
 */
export function openLakeStore(settings: LakeStoreSettings, guard: AddressGuard | undefined): ObjectStore {
  return createObjectStore({
    url: settings.url,
    endpoint: settings.endpoint || undefined,
    region: settings.region || undefined,
    accessKeyId: settings.accessKeyId || undefined,
    secretAccessKey: settings.secretAccessKey || undefined,
    ...(guard ? { lookup: guardedLookup(guard) } : {}),
  });
}

/** An object store for a lake URL. Nothing connects until the first request. */
export function createObjectStore(options: ObjectStoreOptions): ObjectStore {
  const location = parseLakeUrl(options.url);
  if (location.kind === "file") return createFileObjectStore({ directory: location.directory });
  // The AWS SDK is loaded when an S3 lake's store is first opened: a Waypost without one never carries it.
  const opening = import("./s3-object-store.js").then(({ createS3ObjectStore }) =>
    createS3ObjectStore({ ...options, bucket: location.bucket }),
  );
  // Awaited by every method; a failed load is each call's error, not an unhandled rejection.
  opening.catch(() => {});
  return {
    put: async (key, body, contentType) => (await opening).put(key, body, contentType),
    get: async (key) => (await opening).get(key),
    list: async (prefix, page) => (await opening).list(prefix, page),
    delete: async (key) => (await opening).delete(key),
    close: async () => (await opening).close(),
  };
}
