import { Code, ConnectError } from "@connectrpc/connect";
import pg from "pg";
import { afterAll, expect } from "vitest";
import { DeliveryOrder } from "../../gen/waypost/v1/delivery_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

/**
 * Admin reads (ListDeliveries and the rest of DeliveryService) run on a
 * pool of their own with a statement timeout. They are made slow here
 * deterministically: a lock on delivery_attempts, which the full view
 * reads and ingest never touches, holds every one of them.
 */
const adminReads = { connections: 2, statementTimeoutMs: 120_000, maxResponseBytes: 4 * 1024 * 1024 };
const test = testWith({ server: { config: { role: "api", adminReads } } });
let writeKey = "";
let destinationId = "";
let locker: pg.Client | undefined;

test.beforeAll(async ({ server }) => {
  const source = await server.createSource();
  writeKey = source.writeKey;
  destinationId = (await server.createDestination({ name: "d", sourceIds: [source.id], webhooks: [{ url: "https://hooks.example.com/" }] }))
    .id;
  await track(server, "seed");
});
afterAll(async () => {
  await locker?.end();
});

async function track(server: TestServer, messageId: string, properties: Record<string, string> = {}) {
  const answer = await server.tracking(writeKey).track({ track: { messageId, userId: "u1", event: "Probe", properties } });
  expect(answer.messageId).toBe(messageId);
}

/** Holds an exclusive lock on delivery_attempts until release(). */
async function lockAttempts(server: TestServer): Promise<{ release(): Promise<void> }> {
  locker = new pg.Client({ connectionString: server.database.url });
  await locker.connect();
  await locker.query("BEGIN");
  await locker.query("LOCK TABLE delivery_attempts IN ACCESS EXCLUSIVE MODE");
  const client = locker;
  return {
    async release() {
      await client.query("ROLLBACK");
      await client.end();
      locker = undefined;
    },
  };
}

/**
 * Resolves once at least `lockWaiters` sessions wait on the lock and
 * `count` admin reads are held: waiting on the lock in the database, or
 * queued in a pool for a connection (a read may queue twice: its queries
 * run in parallel). Returns how many wait on the lock.
 */
async function heldReads(server: TestServer, count: number, lockWaiters: number): Promise<number> {
  for (;;) {
    const { rows } = await server.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    );
    const queued = server.pool.waitingCount + (server.waypost.adminReadPool?.waitingCount ?? 0);
    if (rows[0]!.n >= lockWaiters && rows[0]!.n + queued >= count) return rows[0]!.n;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test("a tracking call completes while more admin reads than the database pool holds are outstanding", async ({ server }) => {
  const lock = await lockAttempts(server);
  let settled = 0;
  const reads = Array.from({ length: 30 }, () => server.deliveries.listDeliveries({ destinationId }).finally(() => settled++));
  try {
    // The admin pool's connections are all held by the lock; the other reads queue for them.
    const waiting = await heldReads(server, reads.length, adminReads.connections);
    expect(waiting).toBe(adminReads.connections);
    // A generous bound only so that a regression fails instead of hanging:
    // before, the reads took every shared connection and this queued behind them.
    let timer: NodeJS.Timeout | undefined;
    const tracked = await Promise.race([
      track(server, "during-admin-load").then(() => "tracked"),
      new Promise((resolve) => (timer = setTimeout(resolve, 20_000, "still queued"))),
    ]);
    clearTimeout(timer);
    expect(tracked).toBe("tracked");
    expect(settled).toBe(0);
  } finally {
    await lock.release();
  }
  const pages = await Promise.all(reads);
  for (const page of pages) expect(page.deliveries.map((d) => d.messageId)).toContain("seed");
  const stored = await server.pool.query("SELECT 1 FROM messages WHERE message_id = 'during-admin-load'");
  expect(stored.rowCount).toBe(1);
}, 60_000);

test("a read past the statement timeout answers deadline_exceeded naming the limit", async ({ server }) => {
  const quick = await startTestServer({
    database: server.database,
    config: { role: "api", adminReads: { connections: 4, statementTimeoutMs: 300, maxResponseBytes: adminReads.maxResponseBytes } },
  });
  const lock = await lockAttempts(server);
  const outcome = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
  try {
    const alone = await outcome(quick.deliveries.listDeliveries({ destinationId }));
    expect(alone?.code).toBe(Code.DeadlineExceeded);
    expect(alone?.rawMessage).toBe(
      "the query ran past the admin statement timeout of 300 ms (WAYPOST_ADMIN_STATEMENT_TIMEOUT_MS): narrow it with destinationId, since/until or a smaller pageSize",
    );
    // More reads than connections: each is cut at the statement or at its wait for a connection.
    const crowd = await Promise.all(Array.from({ length: 8 }, () => outcome(quick.deliveries.listDeliveries({ destinationId }))));
    for (const failure of crowd) {
      expect(failure?.code).toBe(Code.DeadlineExceeded);
      expect(failure?.rawMessage).toMatch(
        /^(the query ran past the admin statement timeout of 300 ms|admin reads are busy: no database connection for them came free within 300 ms)/,
      );
    }
  } finally {
    await lock.release();
    await quick.stopService();
  }
}, 60_000);

test("a page of deliveries ends early, with a next page token, once its bodies reach the response cap", async ({ server }) => {
  const capped = await startTestServer({
    database: server.database,
    config: { role: "api", adminReads: { ...adminReads, maxResponseBytes: 20_000 } },
  });
  try {
    const big = "x".repeat(8_000);
    for (let i = 0; i < 5; i++) await track(server, `big-${i}`, { blob: big });
    const seen: string[] = [];
    let pageToken = "";
    let pages = 0;
    do {
      const page = await capped.deliveries.listDeliveries({ destinationId, pageSize: 50, pageToken });
      const bytes = page.deliveries.reduce((sum, d) => sum + Buffer.byteLength(d.body), 0);
      expect(page.deliveries.length === 1 || bytes <= 20_000).toBe(true);
      seen.push(...page.deliveries.map((d) => d.messageId));
      pageToken = page.nextPageToken;
      pages++;
    } while (pageToken !== "");
    expect(pages).toBeGreaterThan(1);
    expect(seen.filter((id) => id.startsWith("big-")).sort()).toEqual(["big-0", "big-1", "big-2", "big-3", "big-4"]);
    expect(new Set(seen).size).toBe(seen.length);

    // The finish feed's first read: the newest that fit.
    await capped.pool.query(
      `WITH q AS (DELETE FROM delivery_queue RETURNING *)
       INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count, lease_token)
       SELECT destination_id, id, message_pk, source_id, 'delivered', created_at, now(), attempt_count, lease_token FROM q`,
    );
    const feed = await capped.deliveries.listDeliveries({ destinationId, order: DeliveryOrder.FINISH_TIME_DESC, pageSize: 50 });
    expect(feed.deliveries.length).toBeGreaterThan(0);
    expect(feed.deliveries.reduce((sum, d) => sum + Buffer.byteLength(d.body), 0)).toBeLessThanOrEqual(20_000);
  } finally {
    await capped.stopService();
  }
}, 60_000);
