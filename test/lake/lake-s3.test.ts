import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createMemoryColumnRegistry } from "../../src/lake/column-registry.js";
import { createFileWriter } from "../../src/lake/file-writer.js";
import { lakeRows } from "../../src/lake/lake-rows.js";
import { batchFileName, formatFiles, objectKey } from "../../src/lake/object-keys.js";
import { createObjectStore } from "../../src/lake/object-store.js";
import { isolateAwsEnvironment } from "../helpers/aws-env.js";
import { downloadObjects, readLakeFiles } from "../helpers/duckdb-read.js";
import { type S3Server, startS3Server } from "../helpers/s3-server.js";

let server: S3Server;
let restoreEnv: () => void;
const scratch = mkdtempSync(path.join(tmpdir(), "waypost-lake-s3-"));

beforeAll(async () => {
  restoreEnv = isolateAwsEnvironment();
  server = await startS3Server({ buckets: ["lake"] });
});

afterAll(async () => {
  await server?.close();
  restoreEnv?.();
  rmSync(scratch, { recursive: true, force: true });
});

test("a batch of calls goes up as Parquet files under the layout's keys and reads back in DuckDB", async () => {
  const store = createObjectStore({
    url: "s3://lake/events",
    endpoint: server.endpoint,
    accessKeyId: server.accessKeyId,
    secretAccessKey: server.secretAccessKey,
  });
  const writer = createFileWriter({ format: "parquet" });
  try {
    const receivedAt = new Date("2026-11-22T10:04:05.000Z");
    const calls = Array.from({ length: 50 }, (_, i) => ({
      payload: JSON.stringify({
        type: "track",
        messageId: `m${i}`,
        userId: `u${i % 3}`,
        event: "Order Completed",
        properties: { total: i + 0.5 },
      }),
      receivedAt,
    }));
    const { batches } = await lakeRows(calls, createMemoryColumnRegistry());
    for (const batch of batches) {
      const key = objectKey("events", batch.table, batch.partition, batchFileName(1, 50), "parquet");
      const file = path.join(scratch, `${batch.table}.parquet`);
      await writer.write(batch, file);
      await store.put(key, { path: file }, formatFiles.parquet.contentType);
    }
    const listed = (await store.list("events/")).map((e) => e.key);
    expect(listed).toEqual([
      "events/calls/dt=2026-11-22/hr=10/00000000000000000001-00000000000000000050.parquet",
      "events/order_completed/dt=2026-11-22/hr=10/00000000000000000001-00000000000000000050.parquet",
      "events/tracks/dt=2026-11-22/hr=10/00000000000000000001-00000000000000000050.parquet",
    ]);
    const files = await downloadObjects(store, listed, path.join(scratch, "down"));
    const events = await readLakeFiles([files[1]!]);
    expect(events.rows.length).toBe(50);
    expect(events.rows.reduce((sum, r) => sum + Number(r.total), 0)).toBe(1250);
    const archive = await readLakeFiles([files[0]!], { orderBy: "message_id" });
    expect(archive.types.received_at).toBe("TIMESTAMP WITH TIME ZONE");
    expect(JSON.parse(String(archive.rows[0]!.call))).toMatchObject({ messageId: "m0", event: "Order Completed" });
  } finally {
    await writer.close();
    await store.close();
  }
});

test("the test server decodes aws-chunked uploads (the SDK's default for a stream with checksums)", async () => {
  // The SDK's defaults, not the lake's: a stream body goes up aws-chunked with a CRC32 trailer.
  const client = new S3Client({
    endpoint: server.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
  });
  try {
    const body = Buffer.from(`${"x".repeat(100_000)}end`);
    const before = server.requests.length;
    await client.send(
      new PutObjectCommand({ Bucket: "lake", Key: "chunked/a.txt", Body: Readable.from([body]), ContentLength: body.length }),
    );
    expect(server.requests.slice(before).some((r) => r.chunked)).toBe(true);
    const back = await client.send(new GetObjectCommand({ Bucket: "lake", Key: "chunked/a.txt" }));
    expect(Buffer.from(await back.Body!.transformToByteArray()).equals(body)).toBe(true);
  } finally {
    client.destroy();
  }
});
