import type { LookupFunction } from "node:net";

/** What to store: bytes in memory, or a local file by its path (streamed, never read whole for a multipart upload). */
export type ObjectBody = Buffer | { path: string };

/** One object of a listing. */
export interface ObjectEntry {
  key: string;
  size: number;
}

/** A page of a listing: keys after `startAfter` (in key order), at most `limit` of them. */
export interface ListPage {
  startAfter?: string | undefined;
  limit?: number | undefined;
}

/**
 * Objects by key, in a bucket or a local directory. Keys are relative to the
 * bucket (or directory) and use `/`; a put replaces whatever the key held,
 * and no reader ever sees a partial object under its key. Every method throws
 * ObjectStoreError.
 */
export interface ObjectStore {
  put(key: string, body: ObjectBody, contentType: string): Promise<void>;
  /** The object's bytes; ObjectStoreError with status 404 (not retryable) when there is none. */
  get(key: string): Promise<Buffer>;
  /**
   * The objects whose key starts with `prefix`, in key order: every one, or
   * with `startAfter` and `limit` a page of them (a lake's files read a page
   * at a time, however many there are).
   */
  list(prefix: string, page?: ListPage): Promise<ObjectEntry[]>;
  /** Removes the object; removing one that is not there is not an error. */
  delete(key: string): Promise<void>;
  close(): Promise<void>;
}

export interface ObjectStoreOptions {
  /** `s3://bucket[/prefix]` or `file:///directory` (the prefix is the key builder's business, not the store's). */
  url: string;
  /** An S3-compatible endpoint (MinIO, R2, Ceph): path-style requests are used with it. */
  endpoint?: string | undefined;
  region?: string | undefined;
  /** Static keys; without them the AWS SDK's default credential chain is used. */
  accessKeyId?: string | undefined;
  secretAccessKey?: string | undefined;
  /** Objects above this size go up in parts of this size (default and minimum 5 MiB, S3's least part size). */
  partSizeBytes?: number | undefined;
  /** Attempts the SDK makes per request before the error is handed back (default 3). */
  maxAttempts?: number | undefined;
  /** Per-request timeout (default 60 s). */
  requestTimeoutMs?: number | undefined;
  /** Resolves the endpoint's host name (the lake kind's runs the outbound address guard on every address). */
  lookup?: LookupFunction | undefined;
}
