import { mkdtempSync, readdirSync } from "node:fs";
import path from "node:path";
import { createClient, type Client } from "@connectrpc/connect";
import { expect } from "vitest";
import { type DeletionRequest, DeletionService, DeletionStatus } from "../../gen/waypost/v1/deletion_pb.js";
import { createObjectStore, type ObjectStore } from "../../src/lake/object-store.js";
import { downloadObjects, readLakeFiles } from "../helpers/duckdb-read.js";
import type { S3Server } from "../helpers/s3-server.js";
import type { TestServer } from "../helpers/server.js";
import { withAdmin } from "../audiences/support.js";

export function deletionClient(server: TestServer): Client<typeof DeletionService> {
  return withAdmin(createClient(DeletionService, server.transport), server.adminToken);
}

/** Where a lake of a test is: a directory, or a bucket's prefix in the test S3 server. */
export type LakePlace = { kind: "dir"; directory: string } | { kind: "s3"; s3: S3Server; bucket: string; prefix: string };

export function storeOf(place: Extract<LakePlace, { kind: "s3" }>): ObjectStore {
  return createObjectStore({
    url: `s3://${place.bucket}`,
    endpoint: place.s3.endpoint,
    accessKeyId: place.s3.accessKeyId,
    secretAccessKey: place.s3.secretAccessKey,
  });
}

/** Every file of a lake as a local path (an S3 lake's downloaded into `scratch`), grouped by table. */
export async function lakeFiles(place: LakePlace, scratch: string): Promise<Map<string, string[]>> {
  let files: Array<{ table: string; file: string }>;
  if (place.kind === "dir") {
    const entries = readdirSync(place.directory, { recursive: true, withFileTypes: true }) as Array<{
      isFile(): boolean;
      parentPath: string;
      name: string;
    }>;
    files = entries
      .filter((e) => e.isFile())
      .map((e) => path.join(e.parentPath, e.name))
      .map((file) => ({ table: path.relative(place.directory, file).split(path.sep)[0]!, file }));
  } else {
    const store = storeOf(place);
    try {
      const keys = (await store.list(`${place.prefix}/`)).map((o) => o.key);
      const local = await downloadObjects(store, keys, mkdtempSync(path.join(scratch, "download-")));
      files = keys.map((key, i) => ({ table: key.slice(place.prefix.length + 1).split("/")[0]!, file: local[i]! }));
    } finally {
      await store.close();
    }
  }
  const tables = new Map<string, string[]>();
  for (const { table, file } of files) tables.set(table, [...(tables.get(table) ?? []), file]);
  return tables;
}

/** Every row of every file of a lake, read back with DuckDB, as `table: JSON of the row`, sorted: a multiset to compare. */
export async function lakeRowsOf(place: LakePlace, scratch: string): Promise<string[]> {
  const out: string[] = [];
  for (const [table, files] of await lakeFiles(place, scratch)) {
    // One file at a time: files of one table may have different columns, and each row keeps its own.
    for (const file of files) {
      for (const row of (await readLakeFiles([file])).rows) out.push(`${table}: ${JSON.stringify(row)}`);
    }
  }
  return out.sort();
}

/** Polls GetDeletionRequest until it is completed. */
export async function waitForCompletion(server: TestServer, id: string, timeoutMs = 60_000): Promise<DeletionRequest> {
  const client = deletionClient(server);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const request = (await client.getDeletionRequest({ id })).deletionRequest!;
    if (request.status === DeletionStatus.COMPLETED) return request;
    expect(
      Date.now(),
      `deletion request ${id} still in progress: ${JSON.stringify(request, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`,
    ).toBeLessThan(deadline);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Lets a deletion request's lake jobs start now rather than after their start delay (the lakes here have flushed). */
export async function startLakeJobsNow(server: TestServer, deletionRequestId: string): Promise<void> {
  await server.pool.query("UPDATE background_jobs SET lease_until = now() WHERE deletion_request_id = $1 AND lease_id IS NULL", [
    deletionRequestId,
  ]);
}
