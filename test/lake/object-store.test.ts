import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createObjectStore, type ObjectStore } from "../../src/lake/object-store.js";
import { ObjectStoreError } from "../../src/lake/object-store-error.js";
import { isolateAwsEnvironment } from "../helpers/aws-env.js";
import { type S3Server, startS3Server } from "../helpers/s3-server.js";

let server: S3Server;
let restoreEnv: () => void;
let scratch: string;

beforeAll(async () => {
  restoreEnv = isolateAwsEnvironment();
  server = await startS3Server({ buckets: ["lake"] });
  scratch = mkdtempSync(path.join(tmpdir(), "waypost-lake-store-"));
});

afterAll(async () => {
  await server?.close();
  restoreEnv?.();
  rmSync(scratch, { recursive: true, force: true });
});

const s3Store = (overrides: { accessKeyId?: string; secretAccessKey?: string; maxAttempts?: number } = {}) =>
  createObjectStore({
    url: "s3://lake/prefix",
    endpoint: server.endpoint,
    region: "eu-west-1",
    accessKeyId: server.accessKeyId,
    secretAccessKey: server.secretAccessKey,
    ...overrides,
  });

/** The same checks on both backends: what one promises, the other must too. */
async function roundTrip(store: ObjectStore, base: string) {
  await store.put(`${base}/a/one.txt`, Buffer.from("first"), "text/plain");
  await store.put(`${base}/a/two.txt`, Buffer.from("second"), "text/plain");
  await store.put(`${base}/b/three.txt`, Buffer.from("third"), "text/plain");
  expect((await store.get(`${base}/a/one.txt`)).toString()).toBe("first");
  // A put over an existing key replaces it (a retried upload of the same batch).
  await store.put(`${base}/a/one.txt`, Buffer.from("first again"), "text/plain");
  expect((await store.get(`${base}/a/one.txt`)).toString()).toBe("first again");
  expect(await store.list(`${base}/a/`)).toEqual([
    { key: `${base}/a/one.txt`, size: 11 },
    { key: `${base}/a/two.txt`, size: 6 },
  ]);
  await store.delete(`${base}/a/two.txt`);
  // Deleting what is not there is no error.
  await store.delete(`${base}/a/two.txt`);
  expect((await store.list(`${base}/`)).map((e) => e.key)).toEqual([`${base}/a/one.txt`, `${base}/b/three.txt`]);
  const missing = await store.get(`${base}/a/two.txt`).catch((e: unknown) => e);
  expect(missing).toBeInstanceOf(ObjectStoreError);
  expect((missing as ObjectStoreError).status).toBe(404);
  expect((missing as ObjectStoreError).retryable).toBe(false);
}

/** A file of random bytes larger than one 5 MiB part, so it goes up in parts. */
function bigFile(name: string): { file: string; bytes: Buffer } {
  const bytes = randomBytes(11 * 1024 * 1024 + 123);
  const file = path.join(scratch, name);
  writeFileSync(file, bytes);
  return { file, bytes };
}

describe("S3 object store", () => {
  test("put, get, list and delete through a signature-checking S3 server", async () => {
    const store = s3Store();
    try {
      const before = server.requests.length;
      await roundTrip(store, "rt");
      const mine = server.requests.slice(before);
      // Every request was signed with the right key and reached s3rver (none refused), path-style.
      expect(mine.filter((r) => r.refused !== undefined)).toEqual([]);
      expect(mine.every((r) => r.path.startsWith("/lake/"))).toBe(true);
    } finally {
      await store.close();
    }
  });

  test("a file larger than a part goes up as a multipart upload and reads back byte for byte", async () => {
    const store = s3Store();
    try {
      const { file, bytes } = bigFile("big.bin");
      const before = server.requests.length;
      await store.put("multi/big.bin", { path: file }, "application/octet-stream");
      const mine = server.requests.slice(before);
      expect(mine.filter((r) => r.query.includes("partNumber=")).length).toBe(3);
      expect(mine.some((r) => r.method === "POST" && r.query.startsWith("uploads"))).toBe(true);
      const back = await store.get("multi/big.bin");
      expect(back.length).toBe(bytes.length);
      expect(back.equals(bytes)).toBe(true);
    } finally {
      await store.close();
    }
  });

  test("a small file by path goes up in one request", async () => {
    const store = s3Store();
    try {
      const file = path.join(scratch, "small.txt");
      writeFileSync(file, "small body");
      await store.put("small/one.txt", { path: file }, "text/plain");
      expect((await store.get("small/one.txt")).toString()).toBe("small body");
    } finally {
      await store.close();
    }
  });

  test("a wrong secret key is a clear, non-retryable error that does not contain the key", async () => {
    const secret = "wrong-secret-do-not-print-4242";
    const store = s3Store({ secretAccessKey: secret });
    try {
      const error = await store.put("denied/x.txt", Buffer.from("x"), "text/plain").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ObjectStoreError);
      const e = error as ObjectStoreError;
      expect(e.retryable).toBe(false);
      expect(e.status).toBe(403);
      expect(e.message).toContain("s3://lake/denied/x.txt");
      expect(e.message).toContain("SignatureDoesNotMatch");
      expect(e.message).not.toContain(secret);
      expect(String(e.stack)).not.toContain(secret);
      expect(JSON.stringify(e)).not.toContain(secret);
    } finally {
      await store.close();
    }
  });

  test("an unknown access key is refused with 403, not retryable", async () => {
    const store = s3Store({ accessKeyId: "NOSUCHKEY" });
    try {
      const error = (await store.get("anything").catch((e: unknown) => e)) as ObjectStoreError;
      expect(error).toBeInstanceOf(ObjectStoreError);
      expect(error.status).toBe(403);
      expect(error.code).toBe("InvalidAccessKeyId");
      expect(error.retryable).toBe(false);
    } finally {
      await store.close();
    }
  });

  test("a missing bucket is not retryable", async () => {
    const store = createObjectStore({
      url: "s3://no-such-bucket",
      endpoint: server.endpoint,
      accessKeyId: server.accessKeyId,
      secretAccessKey: server.secretAccessKey,
    });
    try {
      const error = (await store.put("x.txt", Buffer.from("x"), "text/plain").catch((e: unknown) => e)) as ObjectStoreError;
      expect(error).toBeInstanceOf(ObjectStoreError);
      expect(error.status).toBe(404);
      expect(error.retryable).toBe(false);
    } finally {
      await store.close();
    }
  });

  test("500 answers are a retryable error; the same put then succeeds", async () => {
    const store = s3Store({ maxAttempts: 1 });
    try {
      server.failNext(1);
      const error = (await store.put("retry/x.txt", Buffer.from("after"), "text/plain").catch((e: unknown) => e)) as ObjectStoreError;
      expect(error).toBeInstanceOf(ObjectStoreError);
      expect(error.status).toBe(500);
      expect(error.retryable).toBe(true);
      await store.put("retry/x.txt", Buffer.from("after"), "text/plain");
      expect((await store.get("retry/x.txt")).toString()).toBe("after");
    } finally {
      await store.close();
    }
  });

  test("the SDK's own retries get past a short outage", async () => {
    const store = s3Store({ maxAttempts: 3 });
    try {
      server.failNext(2);
      await store.put("retry/y.txt", Buffer.from("third time"), "text/plain");
      expect((await store.get("retry/y.txt")).toString()).toBe("third time");
    } finally {
      await store.close();
    }
  });

  test("a refused connection is retryable", async () => {
    const store = createObjectStore({
      url: "s3://lake",
      endpoint: "http://127.0.0.1:1",
      accessKeyId: "a",
      secretAccessKey: "b",
      maxAttempts: 1,
    });
    try {
      const error = (await store.put("x", Buffer.from("x"), "text/plain").catch((e: unknown) => e)) as ObjectStoreError;
      expect(error).toBeInstanceOf(ObjectStoreError);
      expect(error.retryable).toBe(true);
    } finally {
      await store.close();
    }
  });
});

describe("file object store", () => {
  test("put, get, list and delete under a directory", async () => {
    const directory = path.join(scratch, "lake-dir");
    const store = createObjectStore({ url: `file://${directory}` });
    await roundTrip(store, "rt");
  });

  test("a large file is copied whole, and no temp file is left beside it", async () => {
    const directory = path.join(scratch, "lake-big");
    const store = createObjectStore({ url: `file://${directory}` });
    const { file, bytes } = bigFile("big-file.bin");
    await store.put("t/dt=2026-01-01/big.bin", { path: file }, "application/octet-stream");
    expect((await store.get("t/dt=2026-01-01/big.bin")).equals(bytes)).toBe(true);
    expect(readdirSync(path.join(directory, "t/dt=2026-01-01"))).toEqual(["big.bin"]);
  });

  test("a key cannot reach outside the directory", async () => {
    const store = createObjectStore({ url: `file://${path.join(scratch, "lake-jail")}` });
    const error = (await store.put("../escape.txt", Buffer.from("x"), "text/plain").catch((e: unknown) => e)) as ObjectStoreError;
    expect(error).toBeInstanceOf(ObjectStoreError);
    expect(error.retryable).toBe(false);
  });
});
