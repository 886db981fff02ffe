import { randomUUID } from "node:crypto";
import { PassThrough } from "node:stream";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { expect } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { insertJob } from "../../src/db/queries/background-jobs.js";
import { createMaintenance } from "../../src/background/maintenance.js";
import { createLogger } from "../../src/logger.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { singleNodeJobTable } from "../../src/db/job-table/index.js";
import { parseIdentity } from "../../src/identity-config.js";

const day = 24 * 3_600_000;
const clock = new ManualClock(new Date("2026-11-01T00:00:00Z"));
const test = testWith({
  // No identity resolver: its page transactions read the calls this file stores, and one open
  // during the vacuum test would hold back the dead rows it counts.
  server: { clock, config: { identity: parseIdentity({ WAYPOST_IDENTITY: "off" }) } },
  receiver: { respond: (request) => ({ status: JSON.parse(request.body).event === "stuck" ? 500 : 200 }) },
});

async function count(server: TestServer, table: string): Promise<number> {
  return (await server.pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;
}

test("delivered data is purged after the retention period; unfinished work is kept", async ({ server, receiver }) => {
  const source = await server.createSource();
  await server.createDestination({ name: "hook", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  const client = server.tracking(source.writeKey);
  const delivered = server.waitForDeliveries(3, ["delivered"]);
  for (const event of ["a", "b", "c"]) await client.track({ track: { userId: "u", event } });
  await delivered;
  const stuck = server.waitForDeliveries(1, ["retrying"]);
  await client.track({ track: { userId: "u", event: "stuck" } });
  await stuck;
  // Its next attempt is put beyond the test's days: the clock moves 8 days on, and a retry the
  // loop made meanwhile would add an attempt of a later day, which the purge rightly keeps.
  await server.pool.query("UPDATE delivery_queue SET run_at = $1::timestamptz + interval '365 days' WHERE status = 'retrying'", [
    clock.now(),
  ]);
  expect(await count(server, "messages")).toBe(4);
  expect(await count(server, "delivery_attempts")).toBe(4);

  clock.advance(6 * day);
  expect((await server.waypost.maintenance!.runOnce()).purged).toBe(0);
  expect(await count(server, "messages")).toBe(4);

  // The stuck delivery stays unfinished (as a long-paused one would) to show unfinished work survives.
  clock.advance(2 * day);
  await server.pool.query("UPDATE delivery_queue SET first_attempt_at = $1 WHERE status = 'retrying'", [clock.now()]);
  const firstDay = (
    await server.pool.query<{ day: string }>(
      "SELECT to_char(finalized_at AT TIME ZONE 'UTC', 'YYYYMMDD') AS day FROM delivery_history LIMIT 1",
    )
  ).rows[0]!.day;
  const days = async () =>
    (
      await server.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_class WHERE relname IN ($1, $2)", [
        `delivery_history_${firstDay}`,
        `delivery_attempts_${firstDay}`,
      ])
    ).rows[0]!.n;
  expect(await days()).toBe(2);
  const { purged, droppedDays } = await server.waypost.maintenance!.runOnce();
  expect(purged).toBe(3);
  // The finished deliveries and every attempt of that day went with the
  // day's partitions (dropped, not deleted from); the stuck delivery waits on.
  expect(droppedDays).toBeGreaterThanOrEqual(2);
  expect(await days()).toBe(0);
  expect(await count(server, "messages")).toBe(1);
  expect(await count(server, "deliveries")).toBe(1);
  expect(await count(server, "delivery_queue")).toBe(1);
  expect(await count(server, "delivery_attempts")).toBe(0);
  // The coming days' partitions were made ahead of time.
  const ahead = new Date(clock.now().getTime() + 2 * day).toISOString().slice(0, 10).replaceAll("-", "");
  expect((await server.pool.query("SELECT to_regclass($1) IS NOT NULL AS made", [`delivery_history_${ahead}`])).rows[0].made).toBe(true);
});

test("the job table is vacuumed once dead rows pile up, whether or not autovacuum runs", async ({ server, receiver }) => {
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "churn",
    sourceIds: [source.id],
    enabled: false,
    webhooks: [{ url: receiver.url }],
  });
  const client = await server.pool.connect();
  try {
    await client.query(
      `WITH m AS (
         INSERT INTO messages (source_id, message_id, type, received_at, payload)
         SELECT $1, 'churn-' || g, 'track', now(), '{}' FROM generate_series(1, 30000) g RETURNING id
       )
       INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at)
       SELECT $2, m.id, $1, now(), now() FROM m`,
      [source.id, destination.id],
    );
    // Each claim-like update leaves a dead version behind.
    await client.query("UPDATE delivery_queue SET run_at = now() + interval '1 minute' WHERE destination_id = $1", [destination.id]);
    await client.query("SELECT pg_stat_force_next_flush()");
  } finally {
    client.release();
  }
  const dead = async () =>
    Number((await server.pool.query("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'delivery_queue'")).rows[0].n_dead_tup);
  expect(await dead()).toBeGreaterThanOrEqual(20_000);
  expect(await server.waypost.maintenance!.vacuumIfNeeded()).toBe(true);
  expect(await dead()).toBeLessThan(20_000);
  expect(await server.waypost.maintenance!.vacuumIfNeeded()).toBe(false);
});

test("a maintenance run still going makes the next ticks skip: runs never overlap", async ({ server }) => {
  let skipped = 0;
  const stream = new PassThrough();
  stream.on("data", (chunk: Buffer) => (skipped += chunk.toString().split("maintenance run skipped").length - 1));
  const maintenance = createMaintenance({
    pool: server.pool,
    jobTable: singleNodeJobTable,
    clock,
    logger: createLogger("debug", stream),
    retentionMs: 7 * day,
    deadlineMs: 4 * 3_600_000,
    intervalMs: 20,
    vacuumCheckMs: 3_600_000,
  });
  // A lock held elsewhere keeps a run waiting, as a slow purge would.
  const locker = await server.pool.connect();
  await locker.query("BEGIN");
  await locker.query("LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE");
  const waiting = async () =>
    (
      await server.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%expired%'`,
      )
    ).rows[0]!.n;
  maintenance.start();
  try {
    const deadline = Date.now() + 15_000;
    while (skipped < 10 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(skipped).toBeGreaterThanOrEqual(10);
    expect(await waiting()).toBe(1);
  } finally {
    await locker.query("COMMIT");
    locker.release();
    await maintenance.stop();
  }
  expect(await waiting()).toBe(0);
});

test("backfills and bulk retries that ended are purged after the retention period; a running one is kept", async ({ server, receiver }) => {
  const source = await server.createSource();
  const destination = await server.createDestination({ name: "jobs", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  // Nothing to backfill: done at once.
  const { backfill } = await server.destinations.backfillDestination({
    destinationId: destination.id,
    since: timestampFromDate(new Date(clock.now().getTime() - day)),
  });
  // One held by a process elsewhere for a long while: still running.
  const running = randomUUID();
  await insertJob(server.pool, {
    id: running,
    kind: "retry",
    destinationId: destination.id,
    params: {},
    progress: {},
    state: "running",
    at: clock.now(),
  });
  await server.pool.query("UPDATE background_jobs SET lease_id = gen_random_uuid(), lease_until = 'infinity' WHERE id = $1", [running]);
  clock.advance(6 * day);
  expect((await server.waypost.maintenance!.runOnce()).jobsPurged).toBe(0);
  clock.advance(2 * day);
  expect((await server.waypost.maintenance!.runOnce()).jobsPurged).toBe(1);
  const left = await server.pool.query("SELECT id FROM background_jobs WHERE id = ANY($1::uuid[])", [[backfill!.id, running]]);
  expect(left.rows.map((r) => r.id)).toEqual([running]);
});
