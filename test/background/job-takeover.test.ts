import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { JobState } from "../../gen/waypost/v1/job_pb.js";
import { createPool } from "../../src/db/pool.js";
import { eventually, startServiceProcess, type ServiceProcess } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

// An API-only server stores the job; worker processes work it. The first
// is killed with SIGKILL between two pages and a second takes the job over
// after its lease: every call gets exactly one delivery, every delivery is
// replayed once. The test holds a lock the second page needs (a backfill's
// per-destination lock, a delivery's row) to stop the first worker right
// after its first page.
let api: TestServer;
let locker: pg.Pool;
const processes: ServiceProcess[] = [];
const calls = 12_000;

beforeAll(async () => {
  api = await startTestServer({ config: { role: "api" } });
  locker = createPool({ connectionString: api.database.url, max: 2 });
});
afterAll(async () => {
  for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await Promise.all(processes.map((p) => p.exited));
  await locker?.end();
  await api?.stop();
});

const waitingForLock = () =>
  eventually(
    async () =>
      Number(
        (
          await locker.query(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
          )
        ).rows[0].count,
      ) > 0,
    60_000,
  );

test("a backfill continues in another process after its worker is killed mid-way, creating each delivery exactly once", {
  timeout: 180_000,
}, async () => {
  const source = await api.createSource();
  const destination = await api.createDestination({
    name: "new crm",
    sourceIds: [source.id],
    webhooks: [{ url: "http://127.0.0.1:9/" }],
    enabled: false,
  });
  const since = new Date(Date.now() - 3_600_000);
  await api.pool.query(
    `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
     SELECT $1, 'm' || g, 'track', 'u' || (g % 50), now() - interval '1 minute',
            json_build_object('type', 'track', 'event', 'E', 'userId', 'u' || (g % 50))::text
       FROM generate_series(1, $2) g`,
    [source.id, calls],
  );
  const lock = await locker.connect();
  const key = "hashtext('waypost-backfill:' || $1::text)";
  await lock.query(`SELECT pg_advisory_lock(${key})`, [destination.id]);
  const first = await startServiceProcess(api.database.url, { WAYPOST_ROLE: "worker", WAYPOST_LEASE_MS: "1000" });
  processes.push(first);

  const { backfill } = await api.destinations.backfillDestination({ destinationId: destination.id, since: timestampFromDate(since) });
  expect(backfill).toMatchObject({ state: JobState.RUNNING, candidates: BigInt(calls) });
  // The first page waits for the lock; let it through, and take the lock back before the second.
  await waitingForLock();
  await lock.query(`SELECT pg_advisory_unlock(${key})`, [destination.id]);
  await lock.query(`SELECT pg_advisory_lock(${key})`, [destination.id]);
  await waitingForLock();
  const midway = (await api.destinations.getBackfill({ id: backfill!.id })).backfill!;
  expect(midway.state).toBe(JobState.RUNNING);
  expect(midway.created).toBe(5_000n);

  first.child.kill("SIGKILL");
  expect(await first.exited).toBe("SIGKILL");
  await lock.query(`SELECT pg_advisory_unlock(${key})`, [destination.id]);
  lock.release();
  processes.push(await startServiceProcess(api.database.url, { WAYPOST_ROLE: "worker", WAYPOST_LEASE_MS: "1000" }));

  const done = await eventually(async () => {
    const current = (await api.destinations.getBackfill({ id: backfill!.id })).backfill!;
    return current.state !== JobState.RUNNING && current;
  }, 120_000);
  expect(done).toMatchObject({ state: JobState.DONE, candidates: BigInt(calls), created: BigInt(calls), filtered: 0n });
  const counts = await api.pool.query<{ deliveries: string; messages: string; missing: string }>(
    `SELECT (SELECT count(*) FROM deliveries WHERE destination_id = $1) AS deliveries,
            (SELECT count(DISTINCT message_pk) FROM deliveries WHERE destination_id = $1) AS messages,
            (SELECT count(*) FROM messages m WHERE m.source_id = $2
                AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.destination_id = $1 AND d.message_pk = m.id)) AS missing`,
    [destination.id, source.id],
  );
  expect(counts.rows[0]).toEqual({ deliveries: String(calls), messages: String(calls), missing: "0" });
});

test("a bulk retry continues in another process after its worker is killed mid-way, replaying each delivery exactly once", {
  timeout: 180_000,
}, async () => {
  const failed = 3_000;
  const source = await api.createSource();
  const destination = await api.createDestination({
    name: "flaky",
    sourceIds: [source.id],
    webhooks: [{ url: "http://127.0.0.1:9/" }],
    enabled: false,
  });
  // Failed deliveries, one a millisecond apart (the retry's pages go in creation order), with lease token 7.
  await api.pool.query(
    `WITH m AS (
       INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
       SELECT $1, 'r' || g, 'track', 'u', now() - interval '1 minute', '{}' FROM generate_series(1, $3) g RETURNING id
     )
     INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count, lease_token)
     SELECT $2, nextval('delivery_ids'), m.id, $1, 'failed', now() - interval '1 minute' + m.id * interval '1 millisecond', now(), 1, 7 FROM m`,
    [source.id, destination.id, failed],
  );
  // Hold the 1,500th back (a row lock): the second page waits for it.
  const lock = await locker.connect();
  await lock.query("BEGIN");
  await lock.query(
    `SELECT 1 FROM delivery_history WHERE id = (SELECT id FROM delivery_history WHERE destination_id = $1 ORDER BY created_at, id OFFSET 1499 LIMIT 1) FOR UPDATE`,
    [destination.id],
  );
  const first = await startServiceProcess(api.database.url, { WAYPOST_ROLE: "worker", WAYPOST_LEASE_MS: "1000" });
  processes.push(first);
  const { job } = await api.deliveries.retryDeliveries({ destinationId: destination.id });
  expect(job).toMatchObject({ state: JobState.RUNNING, matched: BigInt(failed) });
  // A backend blocked by this test's row lock: the second page. (Any lock wait would not do: another
  // test's, or a job runner waiting on the job row the page holds, would pass for it too early.)
  const holder = (await lock.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  const blocked = "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))";
  await eventually(async () => Number((await locker.query(blocked, [holder])).rows[0].count) > 0, 60_000);
  const midway = (await api.deliveries.getRetryJob({ id: job!.id })).job!;
  expect(midway).toMatchObject({ state: JobState.RUNNING, retried: 1_000n });

  first.child.kill("SIGKILL");
  expect(await first.exited).toBe("SIGKILL");
  await lock.query("COMMIT");
  lock.release();
  processes.push(await startServiceProcess(api.database.url, { WAYPOST_ROLE: "worker", WAYPOST_LEASE_MS: "1000" }));

  const done = await eventually(async () => {
    const current = (await api.deliveries.getRetryJob({ id: job!.id })).job!;
    return current.state !== JobState.RUNNING && current;
  }, 120_000);
  expect(done).toMatchObject({ state: JobState.DONE, matched: BigInt(failed), retried: BigInt(failed) });
  // Each replayed once: waiting again, its lease token moved on exactly one step.
  const rows = await api.pool.query<{ status: string; lease_token: number; n: number }>(
    "SELECT status, lease_token, count(*)::int AS n FROM deliveries WHERE destination_id = $1 GROUP BY 1, 2",
    [destination.id],
  );
  expect(rows.rows).toEqual([{ status: "retrying", lease_token: 8, n: failed }]);
});
