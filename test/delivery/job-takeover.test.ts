import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { JobState } from "../../gen/waypost/v1/job_pb.js";
import { createPool } from "../../src/db/pool.js";
import { eventually, startServiceProcess, type ServiceProcess } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

// An API-only server stores the backfill; worker processes work it. The
// first is killed with SIGKILL between two pages and a second takes the job
// over after its lease: every call gets exactly one delivery. The test
// holds the destination's backfill lock (which every page takes first) to
// stop the first worker right after its first page.
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
    async () => Number((await locker.query("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")).rows[0].count) > 0,
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
