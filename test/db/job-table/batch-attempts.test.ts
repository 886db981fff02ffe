import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import {
  claimDeliveries,
  completeDeliveries,
  replayDelivery,
  type AttemptResult,
  type BatchAttemptRef,
  type ClaimedDelivery,
  type DeliveryCompletion,
  type DeliveryStatus,
} from "../../../src/db/job-table/index.js";
import type { Pool } from "../../../src/db/pool.js";
import { selectAttempts, selectDestinationStats } from "../../../src/db/queries/deliveries.js";
import { selectMinuteSeries } from "../../../src/db/queries/delivery-stats.js";
import { selectLastAttempts } from "../../../src/db/queries/last-attempts.js";
import { testWith } from "../../helpers/fixtures.js";
import { deleteMessages, enqueueOne, seedSourceAndDestination } from "../../helpers/job-table-fixtures.js";

// A batch operation's attempt is written once (delivery_batch_attempts) and
// referenced from each of its calls' deliveries; every reader lists and
// counts it as each delivery's attempt, as a row per call was before.
const test = testWith();
const minute = 60_000;
let sourceId: string;
let destinationId: string;
const t0 = new Date("2026-11-28T10:00:00Z");

test.beforeAll(async ({ pool }) => {
  await pool.query("SELECT waypost_create_day_partitions('2026-11-28'::date, '2026-11-29'::date)");
});
test.beforeEach(async ({ pool }) => {
  await deleteMessages(pool);
  await pool.query("DELETE FROM delivery_batch_attempts");
  ({ sourceId, destinationId } = await seedSourceAndDestination(pool, t0));
});

async function enqueue(pool: Pool, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await enqueueOne(pool, sourceId, t0)).id);
  return ids;
}

async function claim(pool: Pool, now: Date): Promise<ClaimedDelivery[]> {
  const claimed = await claimDeliveries(pool, { now, limit: 100, perDestinationLimit: 100, room: new Map(), leaseMs: minute, owner: "a" });
  return claimed.deliveries;
}

/** One batch operation's attempt, as its sender reports it for every call. */
function operationAttempt(batch: BatchAttemptRef, at: Date, outcome: AttemptResult["outcome"], error: string | null = null): AttemptResult {
  return {
    urlIndex: 0,
    url: "warehouse#public",
    attemptedAt: at,
    outcome,
    statusCode: null,
    error,
    latencyMs: 40,
    responseBody: null,
    batch,
  };
}

function result(job: ClaimedDelivery, attempt: AttemptResult, at: Date): DeliveryCompletion {
  const status: DeliveryStatus = attempt.outcome === "success" ? "delivered" : attempt.outcome === "permanent" ? "failed" : "retrying";
  return {
    destinationId: job.destinationId,
    id: job.id,
    leaseToken: job.leaseToken,
    status,
    runAt: new Date(at.getTime() + minute),
    attempted: true,
    attemptedAt: at,
    retryUrls: null,
    attempts: [attempt],
  };
}

const count = async (pool: Pool, table: string) => (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;

async function attemptsOf(pool: Pool, ids: string[]) {
  const rows = await selectAttempts(
    pool,
    ids.map(() => destinationId),
    ids,
  );
  return ids.map((id) => rows.filter((r) => r.delivery_id === id).map((r) => ({ attempt: r.attempt, outcome: r.outcome, error: r.error })));
}

test("a batch of N calls writes one batch row and no attempt row per call; each delivery lists the attempt and the stats count N", async ({
  pool,
}) => {
  const ids = await enqueue(pool, 5);
  const jobs = await claim(pool, t0);
  const batch = { id: randomUUID(), calls: 5 };
  const written = await completeDeliveries(
    pool,
    jobs.map((job) => result(job, operationAttempt(batch, t0, "success"), t0)),
  );
  expect(written.size).toBe(5);
  expect(await count(pool, "delivery_attempts")).toBe(0);
  const rows = await pool.query("SELECT batch_id, url, outcome, calls, deliveries, latency_ms FROM delivery_batch_attempts");
  expect(rows.rows).toEqual([{ batch_id: batch.id, url: "warehouse#public", outcome: "success", calls: 5, deliveries: 5, latency_ms: 40 }]);
  expect(await attemptsOf(pool, ids)).toEqual(ids.map(() => [{ attempt: 1, outcome: "success", error: null }]));
  const listed = await selectAttempts(pool, [destinationId], [ids[0]!]);
  expect(listed[0]).toMatchObject({ url: "warehouse#public", attempted_at: t0, latency_ms: 40, status_code: null, discarded_values: null });

  const series = await selectMinuteSeries(pool, destinationId, t0);
  expect(series).toEqual([expect.objectContaining({ delivered: 5, attempts: 5, successes: 5, failedAttempts: 0, p50: 40 })]);
  const stats = await selectDestinationStats(pool, destinationId, t0);
  expect(stats).toMatchObject({ attempts: "5", successes: "5", mean_latency_ms: 40 });
});

test("a failed batch retries every call with the error on each; the next batch delivers them: attempts 1 and 2", async ({ pool }) => {
  const ids = await enqueue(pool, 3);
  const first = { id: randomUUID(), calls: 3 };
  const failed = await completeDeliveries(
    pool,
    (await claim(pool, t0)).map((job) => result(job, operationAttempt(first, t0, "retryable", "warehouse unavailable: ECONNREFUSED"), t0)),
  );
  expect(failed.size).toBe(3);
  const states = await pool.query("SELECT status, attempt_count FROM deliveries WHERE id = ANY($1::bigint[])", [ids]);
  expect(states.rows).toEqual(ids.map(() => ({ status: "retrying", attempt_count: 1 })));

  const t1 = new Date(t0.getTime() + 2 * minute);
  const second = { id: randomUUID(), calls: 3 };
  await completeDeliveries(
    pool,
    (await claim(pool, t1)).map((job) => result(job, operationAttempt(second, t1, "success"), t1)),
  );
  expect(await count(pool, "delivery_attempts")).toBe(0);
  expect(await count(pool, "delivery_batch_attempts")).toBe(2);
  expect(await attemptsOf(pool, ids)).toEqual(
    ids.map(() => [
      { attempt: 1, outcome: "retryable", error: "warehouse unavailable: ECONNREFUSED" },
      { attempt: 2, outcome: "success", error: null },
    ]),
  );
  const last = await selectLastAttempts(
    pool,
    ids.map(() => destinationId),
    ids,
  );
  expect(last.map((a) => a.outcome)).toEqual(["success", "success", "success"]);
  const series = await selectMinuteSeries(pool, destinationId, t0);
  expect(series.map((m) => [m.attempts, m.successes, m.failedAttempts])).toEqual([
    [3, 0, 3],
    [3, 3, 0],
  ]);
});

test("per-item results: only the refused call fails, with its own error; the others share the batch's success", async ({ pool }) => {
  const ids = await enqueue(pool, 3);
  const jobs = await claim(pool, t0);
  const batch = { id: randomUUID(), calls: 3 };
  await completeDeliveries(
    pool,
    jobs.map((job) =>
      result(
        job,
        job.id === ids[1]
          ? operationAttempt(batch, t0, "permanent", "warehouse refused the call: bad")
          : operationAttempt(batch, t0, "success"),
        t0,
      ),
    ),
  );
  const statuses = await pool.query("SELECT status FROM deliveries WHERE id = ANY($1::bigint[]) ORDER BY id", [ids]);
  expect(statuses.rows.map((r) => r.status)).toEqual(["delivered", "failed", "delivered"]);
  expect(await attemptsOf(pool, ids)).toEqual([
    [{ attempt: 1, outcome: "success", error: null }],
    [{ attempt: 1, outcome: "permanent", error: "warehouse refused the call: bad" }],
    [{ attempt: 1, outcome: "success", error: null }],
  ]);
  const rows = await pool.query("SELECT outcome, deliveries FROM delivery_batch_attempts WHERE batch_id = $1 ORDER BY outcome", [batch.id]);
  expect(rows.rows).toEqual([
    { outcome: "success", deliveries: 2 },
    { outcome: "permanent", deliveries: 1 },
  ]);
  expect((await selectMinuteSeries(pool, destinationId, t0))[0]).toMatchObject({ attempts: 3, successes: 2, failedAttempts: 1 });
});

test("calls of one batch completed by two statements share one batch row", async ({ pool }) => {
  const ids = await enqueue(pool, 4);
  const jobs = await claim(pool, t0);
  const batch = { id: randomUUID(), calls: 4 };
  const results = jobs.map((job) => result(job, operationAttempt(batch, t0, "success"), t0));
  expect((await completeDeliveries(pool, results.slice(0, 1))).size).toBe(1);
  expect((await completeDeliveries(pool, results.slice(1))).size).toBe(3);
  const rows = await pool.query("SELECT calls, deliveries FROM delivery_batch_attempts");
  expect(rows.rows).toEqual([{ calls: 4, deliveries: 4 }]);
  expect(await attemptsOf(pool, ids)).toEqual(ids.map(() => [{ attempt: 1, outcome: "success", error: null }]));
});

test("a call with something of its own (the body sent, discarded values) keeps its own attempt row; single calls are unchanged", async ({
  pool,
}) => {
  const ids = await enqueue(pool, 3);
  const jobs = await claim(pool, t0);
  const batch = { id: randomUUID(), calls: 2 };
  await completeDeliveries(pool, [
    result(jobs[0]!, { ...operationAttempt(batch, t0, "success"), sentBody: '{"shaped":true}' }, t0),
    result(jobs[1]!, operationAttempt(batch, t0, "success"), t0),
    result(jobs[2]!, { ...operationAttempt(batch, t0, "success"), batch: undefined }, t0),
  ]);
  expect(await count(pool, "delivery_attempts")).toBe(2);
  const referenced = await pool.query("SELECT id::text FROM deliveries WHERE batch_attempts IS NOT NULL");
  expect(referenced.rows).toEqual([{ id: ids[1] }]);
  expect(await attemptsOf(pool, ids)).toEqual(ids.map(() => [{ attempt: 1, outcome: "success", error: null }]));
  expect((await selectMinuteSeries(pool, destinationId, t0))[0]).toMatchObject({ attempts: 3, successes: 3 });
});

test("a replay keeps the delivery's batch attempts; deleting its message removes its reference, the shared row stays", async ({ pool }) => {
  const ids = await enqueue(pool, 2);
  const batch = { id: randomUUID(), calls: 2 };
  const jobs = await claim(pool, t0);
  await completeDeliveries(
    pool,
    jobs.map((job) => result(job, operationAttempt(batch, t0, "permanent", "refused"), t0)),
  );
  expect(await replayDelivery(pool, destinationId, ids[0]!, t0)).toBe(true);
  const replayed = await pool.query("SELECT status, batch_attempt_numbers FROM deliveries WHERE id = $1", [ids[0]]);
  expect(replayed.rows).toEqual([{ status: "retrying", batch_attempt_numbers: [1] }]);
  expect(await attemptsOf(pool, ids)).toEqual(ids.map(() => [{ attempt: 1, outcome: "permanent", error: "refused" }]));

  // A user's deletion deletes the message: its deliveries and their references go, the other's stay.
  expect(await deleteMessages(pool, "id = (SELECT message_pk FROM deliveries WHERE id = $1)", [ids[0]])).toBe(1);
  expect(await attemptsOf(pool, ids)).toEqual([[], [{ attempt: 1, outcome: "permanent", error: "refused" }]]);
  expect(await count(pool, "delivery_batch_attempts")).toBe(1);
});

test("a batch row keeps its request and the deliveries it carried; deleting one call's message forgets the request's body", async ({
  pool,
}) => {
  const ids = await enqueue(pool, 3);
  const jobs = await claim(pool, t0);
  const batch = { id: randomUUID(), calls: 3 };
  const request = { headers: { "content-type": "application/json", authorization: "***" }, body: '{"batch":["a","b","c"]}', bodyBytes: 23 };
  const results = jobs.map((job) => result(job, { ...operationAttempt(batch, t0, "success"), request }, t0));
  // Two statements: the row's deliveries are those of both.
  await completeDeliveries(pool, results.slice(0, 2));
  await completeDeliveries(pool, results.slice(2));
  const rows = await pool.query("SELECT request_headers, request_body, request_body_bytes, delivery_ids FROM delivery_batch_attempts");
  expect(rows.rows).toHaveLength(1);
  expect(rows.rows[0]).toMatchObject({ request_headers: request.headers, request_body: request.body, request_body_bytes: 23 });
  expect([...rows.rows[0].delivery_ids].sort()).toEqual([...ids].sort());
  expect(await count(pool, "delivery_attempts")).toBe(0);

  // The body carried every call of the batch: one call's deletion takes it; the row stays for the others' attempts.
  expect(await deleteMessages(pool, "id = (SELECT message_pk FROM deliveries WHERE id = $1)", [ids[0]])).toBe(1);
  const after = await pool.query("SELECT request_headers, request_body, deliveries FROM delivery_batch_attempts");
  expect(after.rows).toEqual([{ request_headers: request.headers, request_body: null, deliveries: 3 }]);
  const left = await selectAttempts(pool, [destinationId, destinationId], [ids[1]!, ids[2]!]);
  expect(left.map((a) => [a.request_body, a.batch_calls])).toEqual([
    [null, 3],
    [null, 3],
  ]);
});
