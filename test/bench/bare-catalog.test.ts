// The integration scenarios' bare reference (bench/bare-catalog.mjs) claims
// and completes deliveries with the bench's own SQL and hands each call to
// the catalog's runtime: run against a migrated database and a loopback
// receiver, it must record every queued delivery as delivered and the
// receiver must get every call (one request each, or in batches), so a
// schema or catalog change that breaks it fails here, not in a bench run.
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Pool, Queryable } from "../../src/db/pool.js";
import { openTestDatabase, type OpenTestDatabase } from "../helpers/database.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";

// bench/ is plain JavaScript (type-checked by bench/tsconfig.json); the imports are typed here.
interface QueueModule {
  queueDeliveries(pool: Queryable, options: { sourceId: string; destinationId: string; count: number; prefix?: string }): Promise<void>;
  addBareDestination(pool: Queryable, options: { id: string; name: string }): Promise<void>;
}
interface BareCatalogModule {
  bareCatalog(options: { url: string; sinkUrl: string; count: number; batch: number; inflight?: number }): Promise<{
    recorded: number;
    failed: number;
  }>;
}
const bench = (file: string) => new URL(`../../bench/${file}`, import.meta.url).href;

const sourceId = "00000000-0000-4000-8000-0000000000c8";
const count = 30;
let db: OpenTestDatabase;
let pool: Pool;
let receiver: Receiver;

beforeAll(async () => {
  db = await openTestDatabase();
  ({ pool } = db);
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 'bench', 'k')", [sourceId]);
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await db?.close();
});

test.each([
  ["one request per call", 0, count],
  ["batches of 10", 10, 3],
])(
  "bench/bare-catalog.mjs, %s: every queued call reaches the receiver through the catalog's runtime and is recorded",
  async (_name, batch, requests) => {
    const { queueDeliveries, addBareDestination } = (await import(bench("lib/queue.mjs"))) as QueueModule;
    const { bareCatalog } = (await import(bench("bare-catalog.mjs"))) as BareCatalogModule;
    const destinationId = batch === 0 ? "00000000-0000-4000-8000-0000000000d1" : "00000000-0000-4000-8000-0000000000d2";
    await addBareDestination(pool, { id: destinationId, name: `bare-catalog-${batch}` });
    await queueDeliveries(pool, { sourceId, destinationId, count, prefix: `catalog${batch}` });
    const before = receiver.requests.length;
    const result = await bareCatalog({ url: db.database.url, sinkUrl: receiver.url, count, batch, inflight: 8 });
    expect(result).toMatchObject({ recorded: count, failed: 0 });
    const received = receiver.requests.slice(before);
    expect(received).toHaveLength(requests);
    // Every call's messageId arrived once (a batch body is a JSON array of the calls).
    const ids = received.flatMap((r) => [...r.body.matchAll(/"messageId":"([^"]+)"/g)].map((m) => m[1]));
    expect(new Set(ids).size).toBe(count);
    const { rows } = await pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM deliveries WHERE destination_id = $1 AND status = 'delivered'",
      [destinationId],
    );
    expect(rows[0]!.n).toBe(count);
  },
);
