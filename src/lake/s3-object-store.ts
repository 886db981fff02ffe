import { createReadStream } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { storeError } from "./object-store-error.js";
import type { ObjectEntry, ObjectStore, ObjectStoreOptions } from "./object-store-types.js";

/** S3's least part size for a multipart upload (every part but the last). */
export const minPartSizeBytes = 5 * 1024 * 1024;

export interface S3ObjectStoreOptions extends Omit<ObjectStoreOptions, "url"> {
  bucket: string;
}

/**
 * Objects in an S3 bucket (or an S3-compatible store at `endpoint`). Small
 * objects go up in one PutObject (which S3 makes visible whole, or not at
 * all); larger files in a multipart upload read from disk part by part,
 * which S3 makes visible only when completed (and which is aborted when a
 * part fails, so no parts are left behind to bill for).
 */
export function createS3ObjectStore(options: S3ObjectStoreOptions): ObjectStore {
  const { bucket } = options;
  const partSize = Math.max(options.partSizeBytes ?? minPartSizeBytes, minPartSizeBytes);
  const secrets = options.secretAccessKey ? [options.secretAccessKey] : [];
  const client = new S3Client(clientConfig(options));
  const where = (key: string) => `s3://${bucket}/${key}`;

  async function send<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw storeError(what, error, secrets);
    }
  }

  async function putBuffer(key: string, body: Buffer, contentType: string) {
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: contentType }));
  }

  async function putFile(key: string, file: string, contentType: string) {
    const { size } = await stat(file);
    // One request when it fits: a Buffer body can be retried by the SDK, a stream cannot.
    if (size <= partSize) return putBuffer(key, await readFile(file), contentType);
    const upload = new Upload({
      client,
      params: { Bucket: bucket, Key: key, Body: createReadStream(file), ContentType: contentType },
      partSize,
      // Two parts in flight: enough to keep a loopback or LAN link busy without holding many parts in memory.
      queueSize: 2,
      leavePartsOnError: false,
    });
    await upload.done();
  }

  return {
    put: (key, body, contentType) =>
      send(`PUT ${where(key)}`, () =>
        Buffer.isBuffer(body)
          ? body.length <= partSize
            ? putBuffer(key, body, contentType)
            : new Upload({ client, params: { Bucket: bucket, Key: key, Body: body, ContentType: contentType }, partSize, queueSize: 2 })
                .done()
                .then(() => {})
          : putFile(key, body.path, contentType),
      ),
    get: (key) =>
      send(`GET ${where(key)}`, async () => {
        const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        if (!answer.Body) return Buffer.alloc(0);
        return Buffer.from(await answer.Body.transformToByteArray());
      }),
    list: (prefix, wanted = {}) =>
      send(`LIST ${where(prefix)}`, async () => {
        const entries: ObjectEntry[] = [];
        const limit = wanted.limit ?? Number.POSITIVE_INFINITY;
        let token: string | undefined;
        do {
          const page = await client.send(
            new ListObjectsV2Command({
              Bucket: bucket,
              Prefix: prefix,
              ContinuationToken: token,
              // StartAfter counts only on the first request; the token carries on from there.
              ...(token === undefined && wanted.startAfter ? { StartAfter: wanted.startAfter } : {}),
              // No MaxKeys: an answer holds at most 1,000 keys anyway, and s3rver (the tests' store) fails on it.
            }),
          );
          for (const object of page.Contents ?? []) if (object.Key) entries.push({ key: object.Key, size: object.Size ?? 0 });
          token = page.IsTruncated && entries.length < limit ? page.NextContinuationToken : undefined;
        } while (token);
        return entries.slice(0, limit);
      }),
    delete: (key) =>
      send(`DELETE ${where(key)}`, async () => {
        await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
      }),
    close: async () => client.destroy(),
  };
}

function clientConfig(options: S3ObjectStoreOptions): S3ClientConfig {
  const config: S3ClientConfig = {
    maxAttempts: options.maxAttempts ?? 3,
    requestHandler: {
      requestTimeout: options.requestTimeoutMs ?? 60_000,
      connectionTimeout: 10_000,
      // Connections reused across uploads; every new one resolves its host through `lookup` when given.
      httpAgent: new http.Agent({ keepAlive: true, ...(options.lookup ? { lookup: options.lookup } : {}) }),
      httpsAgent: new https.Agent({ keepAlive: true, ...(options.lookup ? { lookup: options.lookup } : {}) }),
    },
  };
  // An S3-compatible store is named by its endpoint and takes path-style requests
  // (`/bucket/key`): MinIO, Ceph and most others have no per-bucket host names.
  if (options.endpoint) {
    config.endpoint = options.endpoint;
    config.forcePathStyle = true;
    // The SDK's default checksums (CRC32 on every upload, checked on every
    // download) are not supported by every S3-compatible store: send and check
    // them only where an operation requires one.
    config.requestChecksumCalculation = "WHEN_REQUIRED";
    config.responseChecksumValidation = "WHEN_REQUIRED";
  }
  // A region is needed to sign; with an endpoint any will do, so default to S3's first.
  const region = options.region || (options.endpoint ? "us-east-1" : undefined);
  if (region) config.region = region;
  if (options.accessKeyId && options.secretAccessKey) {
    config.credentials = { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey };
  }
  return config;
}
