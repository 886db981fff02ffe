// The benchmark writes Waypost's tables with its own SQL rather than through
// the service: it fills queues directly (bench/lib/queue.mjs, the ordering
// scenario), and its bare baselines insert, claim and complete deliveries
// themselves (bench/bare-insert.mjs, bench/bare-delivery.mjs). These run
// that SQL against a migrated database and check the result with the
// service's own claim, so a schema change that breaks the bench fails here,
// not in a bench run. The bare warehouse load is checked against the
// warehouse loader's own rows for the same call.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, test } from "vitest";
import { claimDeliveries, type ClaimedDelivery } from "../../src/db/job-table/index.js";
import { createWarehouseLoader } from "../../src/warehouse/loader.js";
import type { Pool, Queryable } from "../../src/db/pool.js";
import { openTestDatabase, type OpenTestDatabase } from "../helpers/database.js";

// bench/ is plain JavaScript (type-checked by bench/tsconfig.json with JSDoc);
// this project's tsconfig does not read JavaScript, so the imports are typed here.
interface QueueModule {
  queueDeliveries(pool: Queryable, options: { sourceId: string; destinationId: string; count: number; prefix?: string }): Promise<void>;
}
interface OrderingModule {
  queueUserDeliveries(
    pool: Queryable,
    options: { sourceId: string; destinationId: string; count: number; users: number; prefix: string },
  ): Promise<void>;
}
interface BareInsertModule {
  bareInsert(options: {
    url: string;
    sourceId: string;
    destinationId: string;
    durationMs: number;
    batchSize?: number;
    connections?: number;
    warmupMs?: number;
  }): Promise<{ rows: number }>;
}
interface BareDeliveryModule {
  bareDelivery(options: { url: string; sinkUrl: string; count: number; connections?: number; inflight?: number }): Promise<{
    recorded: number;
    failed: number;
  }>;
}
interface BareWarehouseModule {
  bareWarehouse(options: {
    url: string;
    warehouseUrl: string;
    sourceId: string;
    destinationId: string;
    count: number;
    batch?: number;
    lanes?: number;
  }): Promise<{ rows_in_warehouse: Record<string, number> }>;
}
interface BareInsertBodies {
  trackBody(messageId: string, i: number): string;
}
const bench = (file: string) => new URL(`../../bench/${file}`, import.meta.url).href;

const sourceId = "00000000-0000-4000-8000-0000000000a7";
const destinations = {
  queued: "00000000-0000-4000-8000-0000000000b1",
  bareInsert: "00000000-0000-4000-8000-0000000000b2",
  bareDelivery: "00000000-0000-4000-8000-0000000000b3",
  ordered: "00000000-0000-4000-8000-0000000000b4",
  bareWarehouse: "00000000-0000-4000-8000-0000000000b5",
};

let db: OpenTestDatabase;
let pool: Pool;
let url: string;

beforeAll(async () => {
  db = await openTestDatabase();
  ({ pool } = db);
  url = db.database.url;
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 'bench', 'k')", [sourceId]);
  for (const [name, id] of Object.entries(destinations)) {
    await pool.query(
      `INSERT INTO destinations (id, name, enabled, webhooks, ordering) VALUES ($1, $2, true, '[{"url":"http://example.com","headers":{}}]', $3)`,
      [id, name, name === "ordered" ? "per_user" : "none"],
    );
  }
});
afterAll(async () => {
  await db?.close();
});

/** What the service's claim takes now (each test leaves nothing else due). */
async function claimAll(): Promise<ClaimedDelivery[]> {
  const { deliveries } = await claimDeliveries(pool, {
    now: new Date(Date.now() + 1_000),
    limit: 100_000,
    perDestinationLimit: 100_000,
    room: new Map(),
    leaseMs: 600_000,
    owner: "bench-test",
  });
  return deliveries;
}

async function countDeliveries(destinationId: string, status?: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM deliveries WHERE destination_id = $1 AND ($2::text IS NULL OR status::text = $2)",
    [destinationId, status ?? null],
  );
  return rows[0]!.n;
}

test("bench/lib/queue.mjs: the deliveries it queues in SQL are claimable by the service's claim, with their bodies", async () => {
  const { queueDeliveries } = (await import(bench("lib/queue.mjs"))) as QueueModule;
  const count = 120;
  await queueDeliveries(pool, { sourceId, destinationId: destinations.queued, count, prefix: "q" });

  const deliveries = await claimAll();
  expect(deliveries).toHaveLength(count);
  expect(new Set(deliveries.map((d) => d.messageId))).toEqual(new Set(Array.from({ length: count }, (_, n) => `q-${n}`)));
  for (const delivery of deliveries) {
    expect(delivery).toMatchObject({ destinationId: destinations.queued, attemptCount: 0, probe: false });
    // The body is the stored call as the service would send it.
    expect(JSON.parse(delivery.payload)).toMatchObject({ type: "track", event: "Order Completed", messageId: delivery.messageId });
  }
});

test("bench/bare-insert.mjs: the rows of its ingest baseline are the service's messages and deliveries", async () => {
  const { bareInsert } = (await import(bench("bare-insert.mjs"))) as BareInsertModule;
  await bareInsert({ url, sourceId, destinationId: destinations.bareInsert, durationMs: 200, batchSize: 10, connections: 1, warmupMs: 0 });
  const inserted = await countDeliveries(destinations.bareInsert);
  expect(inserted).toBeGreaterThan(0);

  const deliveries = await claimAll();
  expect(deliveries).toHaveLength(inserted);
  for (const delivery of deliveries) {
    expect(delivery.destinationId).toBe(destinations.bareInsert);
    expect(JSON.parse(delivery.payload)).toMatchObject({ type: "track", messageId: delivery.messageId });
  }
});

test("bench/bare-delivery.mjs: its delivery baseline claims and completes the queued deliveries", async () => {
  const { queueDeliveries } = (await import(bench("lib/queue.mjs"))) as QueueModule;
  const { bareDelivery } = (await import(bench("bare-delivery.mjs"))) as BareDeliveryModule;
  const count = 50;
  await queueDeliveries(pool, { sourceId, destinationId: destinations.bareDelivery, count, prefix: "bare" });
  const sink = http.createServer((req, res) => req.resume().on("end", () => res.end("ok")));
  await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = sink.address() as AddressInfo;
    const result = await bareDelivery({ url, sinkUrl: `http://127.0.0.1:${port}`, count, connections: 4, inflight: 8 });
    expect(result).toMatchObject({ recorded: count, failed: 0 });
  } finally {
    sink.closeAllConnections();
    await new Promise((resolve) => sink.close(resolve));
  }
  expect(await countDeliveries(destinations.bareDelivery, "delivered")).toBe(count);
});

test("the ordering scenario's queue: ordering keys the service's per-user claim honours", async () => {
  const { queueUserDeliveries } = (await import(bench("scenarios/ordering.mjs"))) as OrderingModule;
  await queueUserDeliveries(pool, { sourceId, destinationId: destinations.ordered, count: 30, users: 10, prefix: "o" });

  // Per-user ordering: one delivery per user at a time, each user's first.
  const deliveries = await claimAll();
  expect(deliveries.map((d) => d.messageId).sort()).toEqual(Array.from({ length: 10 }, (_, g) => `o-${g}`).sort());
});

test("bench/bare-warehouse.mjs: its warehouse baseline stores and loads every call, filling the columns the loader fills", async () => {
  const { bareWarehouse } = (await import(bench("bare-warehouse.mjs"))) as BareWarehouseModule;
  const { trackBody } = (await import(bench("bare-insert.mjs"))) as BareInsertBodies;
  // The service's loader makes waypost.tracks and waypost.order_completed (here in the test database itself) from one call.
  const loader = createWarehouseLoader({ url, schema: "waypost" });
  try {
    expect(await loader.load([{ payload: trackBody("loader-1", 1), receivedAt: new Date() }])).toEqual([{ outcome: "success" }]);
  } finally {
    await loader.close();
  }
  const count = 250;
  const result = await bareWarehouse({ url, warehouseUrl: url, sourceId, destinationId: destinations.bareWarehouse, count, batch: 100 });
  expect(result.rows_in_warehouse).toEqual({ tracks: count, order_completed: count });
  expect(await countDeliveries(destinations.bareWarehouse, "delivered")).toBe(count);
  for (const table of ["tracks", "order_completed"]) {
    const filled = async (schema: string) => {
      const { rows } = await pool.query<Record<string, unknown>>(`SELECT * FROM ${schema}.${table} LIMIT 1`);
      return Object.keys(rows[0]!)
        .filter((column) => rows[0]![column] !== null)
        .sort();
    };
    expect(await filled("bare")).toEqual(await filled("waypost"));
  }
});
