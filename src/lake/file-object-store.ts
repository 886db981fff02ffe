import { randomBytes } from "node:crypto";
import { copyFile, mkdir, readdir, readFile, rename, rm, stat, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { ObjectStoreError } from "./object-store-error.js";
import type { ObjectEntry, ObjectStore } from "./object-store-types.js";

export interface FileObjectStoreOptions {
  directory: string;
}

/** Temp files start with this, so a listing skips what a crashed put left behind. */
const tempMark = ".waypost-tmp-";

/**
 * Objects as files under a directory. A put writes a temp file in the
 * object's own directory and renames it over the final name: rename within
 * one directory is atomic, so a reader sees the old file or the whole new
 * one, never a partial one.
 */
export function createFileObjectStore(options: FileObjectStoreOptions): ObjectStore {
  const root = path.resolve(options.directory);

  function fileOf(key: string): string {
    const file = path.resolve(root, key);
    // A key with `..` must not reach outside the lake's directory.
    if (key === "" || !file.startsWith(root + path.sep))
      throw new ObjectStoreError(`key ${JSON.stringify(key)} is outside the lake`, false);
    return file;
  }

  async function attempt<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw fsError(what, error);
    }
  }

  return {
    put: (key, body) =>
      attempt(`write ${key}`, async () => {
        const file = fileOf(key);
        await mkdir(path.dirname(file), { recursive: true });
        const temp = path.join(path.dirname(file), `${tempMark}${randomBytes(6).toString("hex")}`);
        try {
          if (Buffer.isBuffer(body)) await writeFile(temp, body);
          else await copyFile(body.path, temp);
          await rename(temp, file);
        } catch (error) {
          await rm(temp, { force: true });
          throw error;
        }
      }),
    get: (key) => attempt(`read ${key}`, () => readFile(fileOf(key))),
    // A directory has no listing in key order to resume: it is walked whole and the page cut from it.
    list: (prefix, wanted = {}) =>
      attempt(`list ${prefix}`, async () => {
        const entries: ObjectEntry[] = [];
        const files = await readdir(root, { recursive: true, withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
          if (error.code === "ENOENT") return [];
          throw error;
        });
        for (const entry of files) {
          if (!entry.isFile() || entry.name.startsWith(tempMark)) continue;
          const key = path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join("/");
          if (key.startsWith(prefix)) entries.push({ key, size: (await stat(path.join(root, key))).size });
        }
        entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
        const after = wanted.startAfter;
        const from = after === undefined ? entries : entries.filter((entry) => entry.key > after);
        return wanted.limit === undefined ? from : from.slice(0, wanted.limit);
      }),
    delete: (key) =>
      attempt(`delete ${key}`, async () => {
        await unlink(fileOf(key)).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== "ENOENT") throw error;
        });
      }),
    close: async () => {},
  };
}

/** A file system error: a missing file or a refused permission is for the operator; a full disk or too many open files may pass. */
function fsError(what: string, error: unknown): ObjectStoreError {
  if (error instanceof ObjectStoreError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  const retryable = code === "ENOSPC" || code === "EMFILE" || code === "ENFILE" || code === "EAGAIN" || code === "EBUSY";
  const status = code === "ENOENT" ? 404 : code === "EACCES" || code === "EPERM" ? 403 : undefined;
  return new ObjectStoreError(`${what} failed: ${(error as Error).message}`, retryable, status, code);
}
