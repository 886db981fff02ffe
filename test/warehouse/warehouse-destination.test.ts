import { Code, ConnectError, createClient } from "@connectrpc/connect";
import type pg from "pg";
import { expect, vi } from "vitest";
import { DeletionService } from "../../gen/waypost/v1/deletion_pb.js";
import { DeliveryStatus, DeliveryView } from "../../gen/waypost/v1/delivery_pb.js";
import { DestinationHealth, DestinationKind } from "../../gen/waypost/v1/destination_pb.js";
import { ManualClock } from "../../src/clock.js";
import type { DeliveryCompletion } from "../../src/delivery/loop.js";
import { withAdmin } from "../audiences/support.js";
import { createPool } from "../../src/db/pool.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { testWith } from "../helpers/fixtures.js";
import { nextAttemptOf, type TestServer } from "../helpers/server.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { post } from "../compat/support.js";

const flushMs = 10_000;
const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
const test = testWith({
  server: {
    clock,
    config: {
      // Batches of 4 load at once, smaller ones at the flush interval.
      delivery: {
        concurrency: 16,
        perDestinationConcurrency: 4,
        warehouse: { flushMs, batchSize: 4, connections: 2, maxColumns: 1_000 },
      },
    },
  },
});
let warehouse: TestDatabase;
let second: TestDatabase;
let db: pg.Pool;
let proxy: TcpProxy;

test.beforeAll(async () => {
  [warehouse, second] = await Promise.all([createTestDatabase({ migrated: false }), createTestDatabase({ migrated: false })]);
  const target = new URL(warehouse.url);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  // createPool listens for an idle connection's error: the warehouse's database is dropped
  // WITH (FORCE) at the end, which can reach a connection the ended pool is still closing.
  db = createPool({ connectionString: warehouse.url, max: 2 });
});
test.afterAll(async ({ server }) => {
  // Stopped before its warehouses go (the fixture's own stop is then a no-op).
  await server.stop();
  await db?.end();
  await proxy?.close();
  await warehouse?.drop();
  await second?.drop();
});

/**
 * The password in the warehouse URLs, which must never come back: the
 * database's own when it has one (the embedded Postgres checks it), else
 * one that a trusting server ignores.
 */
function warehousePassword(database = warehouse): string {
  return decodeURIComponent(new URL(database.url).password) || "s3cret-pw";
}

/** The warehouse URL through the proxy (so it can be taken down), with a password to mask. */
function proxiedUrl(database = warehouse): string {
  const url = new URL(database.url);
  url.port = String(proxy.port);
  url.password = encodeURIComponent(warehousePassword(database));
  return url.toString();
}

async function warehouseDestination(server: TestServer, schema: string) {
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: `wh-${schema}`,
    sourceIds: [source.id],
    kind: DestinationKind.POSTGRES,
    postgres: { url: proxiedUrl(), schema },
  });
  return { source, destination, client: server.tracking(source.writeKey) };
}

const finalStatuses = ["delivered", "failed", "expired", "cancelled"];

/** Resolves with the next `count` results of this destination's deliveries in one of `statuses`. */
function resultsOf(server: TestServer, destinationId: string, count: number, statuses = finalStatuses): Promise<DeliveryCompletion[]> {
  const loop = server.waypost.delivery!;
  return new Promise((resolve) => {
    const seen: DeliveryCompletion[] = [];
    const off = loop.events.on("completed", (completions) => {
      seen.push(...completions.filter((c) => c.destinationId === destinationId && statuses.includes(c.status)));
      if (seen.length >= count) {
        off();
        resolve(seen);
      }
    });
  });
}

/** Moves the clock past the flush interval and lets the loop turn: the batch held now is loaded. */
async function flushByClock(server: TestServer, destinationId: string, count: number, statuses?: string[]) {
  const done = resultsOf(server, destinationId, count, statuses);
  clock.advance(flushMs);
  server.waypost.delivery!.poke();
  return done;
}

/**
 * Resolves once the delivery loop has taken every call stored so far (claimed per call, read by its cursor on the
 * call log): each is in a held batch, which loads at its flush interval or when full. Call it after the calls.
 */
const handedOver = (server: TestServer) => server.waypost.delivery!.caughtUp();

// Still used by the RetryDeliveries test: its retried call is not yet waited for layout-neutrally.
/** Resolves once the loop has claimed `count` deliveries (into a batch) from now on; set it up before what makes them due. */
function claims(server: TestServer, count: number): Promise<void> {
  const loop = server.waypost.delivery!;
  return new Promise<void>((resolve) => {
    let total = 0;
    const off = loop.events.on("claimed", ({ count: n }) => {
      total += n;
      if (total >= count) {
        off();
        resolve();
      }
    });
  });
}

const rows = async (sql: string) => (await db.query(sql)).rows;

test("a Postgres destination: its URL's password is never returned; bad settings name their field", async ({ server }) => {
  const { destination } = await warehouseDestination(server, "api");
  expect(destination.kind).toBe(DestinationKind.POSTGRES);
  expect(destination.webhooks).toEqual([]);
  expect(destination.postgres?.hasPostgresUrl).toBe(true);
  expect(destination.postgres?.schema).toBe("api");
  expect(destination.postgres?.url).toContain("****");
  const got = await server.destinations.getDestination({ id: destination.id });
  expect(JSON.stringify(got, (_, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(warehousePassword());
  const bad = async (postgres: { url: string; schema?: string }, field: string) => {
    const error = await server.destinations
      .createDestination({ destination: { name: "x", kind: DestinationKind.POSTGRES, postgres } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect((error as ConnectError).message).toContain(field);
  };
  await bad({ url: "http://example.com/db" }, "destination.postgres.url");
  await bad({ url: "postgres://host" }, "destination.postgres.url");
  await bad({ url: proxiedUrl(), schema: 'x"; DROP SCHEMA public; --' }, "destination.postgres.schema");
  const withWebhooks = await server.destinations
    .createDestination({
      destination: {
        name: "x",
        kind: DestinationKind.POSTGRES,
        postgres: { url: proxiedUrl() },
        webhooks: [{ url: "https://example.com" }],
      },
    })
    .catch((e: unknown) => e);
  expect((withWebhooks as ConnectError).message).toContain("destination.webhooks");
  // The masked URL sent back keeps the stored one.
  const updated = await server.destinations.updateDestination({
    destination: { id: destination.id, postgres: { url: destination.postgres!.url, schema: "api2" } },
    updateMask: { paths: ["postgres"] },
  });
  expect(updated.destination?.postgres?.schema).toBe("api2");
  const stored = await server.pool.query("SELECT postgres FROM destinations WHERE id = $1", [destination.id]);
  expect(stored.rows[0].postgres.url).toContain(warehousePassword());
});

test("calls wait for their batch: loaded at the flush interval, delivered when it commits", async ({ server }) => {
  const { client, destination } = await warehouseDestination(server, "flush");
  const first = await client.identify({ identify: { userId: "u1", traits: { plan: "pro" } } });
  await client.track({ track: { userId: "u1", event: "Order Completed", properties: { total: 30 } } });
  await handedOver(server);
  expect(await rows("SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = 'flush'")).toEqual([{ n: 0 }]);
  const done = await flushByClock(server, destination.id, 2);
  expect(done.map((c) => c.status)).toEqual(["delivered", "delivered"]);
  expect(await rows("SELECT user_id, total FROM flush.order_completed")).toEqual([{ user_id: "u1", total: "30" }]);
  expect(await rows("SELECT id, plan FROM flush.users")).toEqual([{ id: "u1", plan: "pro" }]);
  const received = await server.pool.query("SELECT received_at FROM messages WHERE message_id = $1", [first.messageId]);
  expect((await rows(`SELECT received_at FROM flush.identifies`))[0].received_at).toEqual(received.rows[0].received_at);
});

test("a full batch loads without waiting for the interval", async ({ server }) => {
  const { client, destination } = await warehouseDestination(server, "batched");
  const done = resultsOf(server, destination.id, 4);
  for (let i = 0; i < 4; i++) await client.track({ track: { userId: `u${i}`, event: "Tapped" } });
  expect((await done).map((c) => c.status)).toEqual(["delivered", "delivered", "delivered", "delivered"]);
  expect(await rows("SELECT count(*)::int AS n FROM batched.tapped")).toEqual([{ n: 4 }]);
});

test("a warehouse that is down is retried on the normal schedule; back up, nothing is lost or duplicated", async ({ server }) => {
  const { client, destination } = await warehouseDestination(server, "outage");
  proxy.down();
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await client.track({ track: { userId: "u", event: "Kept", messageId: `k${i}` } })).messageId);
  await handedOver(server);
  const retrying = await flushByClock(server, destination.id, 3, ["retrying"]);
  expect(retrying.map((c) => c.status)).toEqual(["retrying", "retrying", "retrying"]);
  // One batch attempt for the three calls, listed as each delivery's attempt (and naming the other two).
  const listed = await server.deliveries.listDeliveries({ destinationId: destination.id, view: DeliveryView.FULL });
  const outage = listed.deliveries.filter((d) => ids.includes(d.messageId));
  expect(outage.map((d) => d.status)).toEqual(ids.map(() => DeliveryStatus.RETRYING));
  expect(outage.map((d) => d.attempts.map((a) => [a.attempt, a.error.slice(0, 21)]))).toEqual(
    ids.map(() => [[1, "warehouse unavailable"]]),
  );
  for (const d of outage) {
    const others = outage.filter((o) => o.id !== d.id).map((o) => o.id);
    expect([d.attempts[0]!.batchCalls, [...d.attempts[0]!.batchDeliveryIds].sort()]).toEqual([3, others.sort()]);
  }
  expect(outage[0]!.attempts[0]!.url).not.toContain(warehousePassword());
  // Endpoint health sees it like a failing webhook endpoint.
  const health = (await server.destinations.getDestination({ id: destination.id })).destination!;
  expect(health.health).toBe(DestinationHealth.FAILING);
  expect(health.lastError).toContain("warehouse unavailable");
  expect(health.lastError).not.toContain(warehousePassword());
  proxy.up();
  // The retry is due about 10 s later (as the API says); its batch then waits for the flush interval.
  const due = await nextAttemptOf(server, destination.id);
  expect(due.getTime() - clock.now().getTime()).toBeGreaterThan(0);
  expect(due.getTime() - clock.now().getTime()).toBeLessThanOrEqual(20_000);
  // Listened for before the clock moves: on the call log the head page's retry need not wait for the interval.
  const delivered = resultsOf(server, destination.id, 3);
  clock.set(due);
  await handedOver(server);
  clock.advance(flushMs);
  server.waypost.delivery!.poke();
  expect((await delivered).map((c) => c.status)).toEqual(["delivered", "delivered", "delivered"]);
  expect(await rows("SELECT count(*)::int AS n FROM outage.kept")).toEqual([{ n: 3 }]);
  // Each delivery lists both batch attempts, numbered 1 and 2.
  for (const messageId of ids) {
    const [one] = (await server.deliveries.listDeliveries({ destinationId: destination.id, messageId, view: DeliveryView.FULL }))
      .deliveries;
    expect(one!.attempts.map((a) => [a.attempt, a.error === "" ? "ok" : "failed"])).toEqual([
      [1, "failed"],
      [2, "ok"],
    ]);
  }
  expect(await rows("SELECT count(*)::int AS n FROM outage.tracks")).toEqual([{ n: 3 }]);
});

test("a mismatched value is stored NULL and counted in /metrics", async ({ server }) => {
  const { client, destination } = await warehouseDestination(server, "types");
  for (const amount of [5, "five"]) {
    await client.track({ track: { userId: "u", event: "Paid", properties: { amount } } });
    await handedOver(server);
    await flushByClock(server, destination.id, 1);
  }
  expect(await rows("SELECT amount FROM types.paid ORDER BY amount NULLS LAST")).toEqual([{ amount: "5" }, { amount: null }]);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  expect(metrics).toContain(`waypost_warehouse_type_mismatches_total{destination_id="${destination.id}"} 1`);
});

test("a deletion request deletes the user's rows from every table of the schema", async ({ server }) => {
  const { client, source, destination } = await warehouseDestination(server, "forget");
  await client.identify({ identify: { userId: "gone", traits: { a: 1 } } });
  await client.track({ track: { userId: "gone", event: "Bought" } });
  await client.track({ track: { userId: "kept", event: "Bought" } });
  await handedOver(server);
  await flushByClock(server, destination.id, 3);
  const deletions = withAdmin(createClient(DeletionService, server.transport), server.adminToken);
  await deletions.createDeletionRequest({ userId: "gone", sourceIds: [source.id] });
  await handedOver(server);
  await flushByClock(server, destination.id, 1);
  expect(await rows("SELECT user_id FROM forget.bought")).toEqual([{ user_id: "kept" }]);
  expect(await rows("SELECT count(*)::int AS n FROM forget.identifies")).toEqual([{ n: 0 }]);
  expect(await rows("SELECT count(*)::int AS n FROM forget.users")).toEqual([{ n: 0 }]);
});

test("the pool to a warehouse is closed when the destination is repointed and when it is deleted", async ({ server }) => {
  const { client, destination } = await warehouseDestination(server, "pools");
  const connections = async (database: TestDatabase) =>
    (
      await db.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'waypost-warehouse'", [
        database.name,
      ])
    ).rows[0].n as number;
  await client.track({ track: { userId: "u", event: "One" } });
  await handedOver(server);
  await flushByClock(server, destination.id, 1);
  expect(await connections(warehouse)).toBeGreaterThan(0);
  await server.destinations.updateDestination({
    destination: { id: destination.id, postgres: { url: proxiedUrl(second), schema: "pools" } },
    updateMask: { paths: ["postgres"] },
  });
  await client.track({ track: { userId: "u", event: "Two" } });
  await handedOver(server);
  await flushByClock(server, destination.id, 1);
  // Other destinations of this file still use the first warehouse: count this one's by the second.
  await vi.waitFor(async () => expect(await connections(second)).toBeGreaterThan(0), { timeout: 10_000 });
  await server.destinations.deleteDestination({ id: destination.id });
  // The loop checks its open warehouses against their destinations every 30 s (by the clock).
  clock.advance(30_000);
  server.waypost.delivery!.poke();
  await vi.waitFor(async () => expect(await connections(second)).toBe(0), { timeout: 10_000 });
});

test("one bad call fails alone; after the warehouse is fixed, RetryDeliveries loads it", async ({ server }) => {
  const { client, destination } = await warehouseDestination(server, "bulk");
  await client.track({ track: { userId: "u", event: "Capped", properties: { amount: 1 } } });
  await handedOver(server);
  await flushByClock(server, destination.id, 1);
  // The warehouse's owner adds a rule of their own that the next call breaks.
  await db.query("ALTER TABLE bulk.capped ADD CONSTRAINT small CHECK (amount < 100)");
  const bad = await client.track({ track: { userId: "u", event: "Capped", properties: { amount: 500 } } });
  await client.track({ track: { userId: "u", event: "Narrow", properties: { ok: true } } });
  await handedOver(server);
  const results = await flushByClock(server, destination.id, 2);
  expect(results.map((c) => c.status).sort()).toEqual(["delivered", "failed"]);
  expect(await rows("SELECT count(*)::int AS n FROM bulk.narrow")).toEqual([{ n: 1 }]);
  const failed = await server.deliveries.listDeliveries({ destinationId: destination.id, messageId: bad.messageId });
  const detail = await server.deliveries.getDelivery({ id: failed.deliveries[0]!.id });
  // Postgres's own reason.
  expect(detail.delivery?.attempts[0]?.error).toContain('violates check constraint "small"');

  await db.query("ALTER TABLE bulk.capped DROP CONSTRAINT small");
  const replayed = claims(server, 1);
  await server.deliveries.retryDeliveries({ destinationId: destination.id });
  server.waypost.delivery!.poke();
  await replayed;
  const retried = await flushByClock(server, destination.id, 1);
  expect(retried.map((c) => c.status)).toEqual(["delivered"]);
  expect(await rows("SELECT amount FROM bulk.capped ORDER BY amount")).toEqual([{ amount: "1" }, { amount: "500" }]);
});

test("values not stored in their columns: the call is delivered, its attempt says which and why (Postgres's reason kept), the stats count them", async ({
  server,
}) => {
  const { client, destination } = await warehouseDestination(server, "wide");
  // An event table a few columns short of Postgres' 1,600 (made by hand: dropped columns count toward that limit too).
  const columns = Array.from({ length: 1_595 }, (_, i) => `"c${i}" boolean`).join(", ");
  await db.query("CREATE SCHEMA wide");
  await db.query(`CREATE TABLE wide.wide (id text PRIMARY KEY, ${columns})`);
  const sent = await client.track({
    track: { userId: "u", event: "Wide", properties: { first: 1, second: 2, third: 3, fourth: 4, fifth: 5, sixth: 6, seventh: 7 } },
  });
  await client.track({ track: { userId: "u", event: "Typed", properties: { when: "2026-02-30T10:00:00Z", n: 1 } } });
  await handedOver(server);
  expect((await flushByClock(server, destination.id, 2)).map((c) => c.status)).toEqual(["delivered", "delivered"]);
  const list = await server.deliveries.listDeliveries({ destinationId: destination.id, messageId: sent.messageId });
  const attempt = (await server.deliveries.getDelivery({ id: list.deliveries[0]!.id })).delivery!.attempts[0]!;
  expect(attempt.discardedValues).toBeGreaterThan(0);
  expect(attempt.responseBody).toContain("kept in waypost_discards");
  expect(attempt.responseBody).toContain("tables can have at most 1600 columns");
  const discarded = await rows("SELECT column_name, value, reason FROM wide.waypost_discards WHERE table_name = 'wide' ORDER BY 1");
  expect(discarded.length).toBe(attempt.discardedValues);
  expect(discarded[0].reason).toContain("Postgres refused the column: tables can have at most 1600 columns");
  const stats = await server.deliveries.getDestinationStats({ destinationId: destination.id });
  expect(stats.discardedValuesLast24h).toBe(BigInt(attempt.discardedValues));
  expect(stats.discardedValuesLastHour).toBe(BigInt(attempt.discardedValues));
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  expect(metrics).toContain(`waypost_warehouse_refused_columns_total{destination_id="${destination.id}"} ${attempt.discardedValues}`);
});

test("a /v1/batch's sentAt is stored with each call and loaded as sent_at (a message's own, else the batch's); loaded_at is the load time", async ({
  server,
}) => {
  const { source, destination } = await warehouseDestination(server, "sent");
  const response = await post(
    server,
    "/v1/batch",
    {
      sentAt: "2026-11-22T09:59:58.000Z",
      batch: [
        { type: "track", userId: "u", event: "Own", messageId: "own", sentAt: "2026-11-22T09:59:57.500Z" },
        { type: "track", userId: "u", event: "Batch", messageId: "batch" },
        { type: "track", userId: "u", event: "Odd", messageId: "odd", sentAt: "0000-01-01T00:00:00Z" },
      ],
    },
    { writeKey: source.writeKey },
  );
  expect(response.status).toBe(200);
  await handedOver(server);
  expect((await flushByClock(server, destination.id, 3)).map((c) => c.status)).toEqual(["delivered", "delivered", "delivered"]);
  const stored = await server.pool.query("SELECT message_id, sent_at FROM messages WHERE message_id IN ('own', 'batch', 'odd') ORDER BY 1");
  expect(stored.rows).toEqual([
    { message_id: "batch", sent_at: new Date("2026-11-22T09:59:58.000Z") },
    // A sentAt Postgres cannot hold (year 0) is left out, the batch's taken instead.
    { message_id: "odd", sent_at: new Date("2026-11-22T09:59:58.000Z") },
    { message_id: "own", sent_at: new Date("2026-11-22T09:59:57.500Z") },
  ]);
  const loaded = await rows("SELECT id, sent_at, loaded_at IS NOT NULL AS has_loaded_at FROM sent.tracks ORDER BY id");
  expect(loaded).toEqual([
    { id: "batch", sent_at: new Date("2026-11-22T09:59:58.000Z"), has_loaded_at: true },
    { id: "odd", sent_at: new Date("2026-11-22T09:59:58.000Z"), has_loaded_at: true },
    { id: "own", sent_at: new Date("2026-11-22T09:59:57.500Z"), has_loaded_at: true },
  ]);
});

test("settings that name Waypost's own database (saved past the API's check) fail their deliveries before anything is loaded", async ({
  server,
}) => {
  const { client, destination } = await warehouseDestination(server, "own");
  // As if saved by an earlier version, or while the check could not connect.
  await server.pool.query(
    "UPDATE destinations SET postgres = jsonb_build_object('url', $2::text, 'schema', 'public'), revision = revision + 1 WHERE id = $1",
    [destination.id, server.database.url],
  );
  const columnsBefore = await server.pool.query("SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = 'public'");
  await client.track({ track: { userId: "u", event: "Messages", properties: { injected: true } } });
  await handedOver(server);
  const [result] = await flushByClock(server, destination.id, 1);
  expect(result!.status).toBe("failed");
  const list = await server.deliveries.listDeliveries({ destinationId: destination.id });
  const attempt = (await server.deliveries.getDelivery({ id: list.deliveries[0]!.id })).delivery!.attempts[0]!;
  expect(attempt.error).toBe("warehouse URL is Waypost's own database: a warehouse must be another database");
  const columnsAfter = await server.pool.query("SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = 'public'");
  expect(columnsAfter.rows).toEqual(columnsBefore.rows);
});
