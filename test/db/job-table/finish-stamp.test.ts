import { expect } from "vitest";
import {
  cancelDestinationDeliveries,
  claimDeliveries,
  completeDeliveries,
  replayDelivery,
  type ClaimedDelivery,
  type DeliveryCompletion,
  type DeliveryStatus,
} from "../../../src/db/job-table/index.js";
import { withTransaction, type Pool, type Queryable } from "../../../src/db/pool.js";
import { testWith } from "../../helpers/fixtures.js";
import { deleteMessages, enqueueOne, seedSourceAndDestination } from "../../helpers/job-table-fixtures.js";

// finished_xid (what the finish feed reads) is the transaction that moved
// the delivery into the history, and attempt rows go with their delivery's
// message, without a row trigger or a foreign key on the completion's path.
const test = testWith();

const minute = 60_000;
const t0 = new Date("2026-11-01T00:00:00Z");
let sourceId: string;
let destinationId: string;

test.beforeEach(async ({ pool }) => {
  await deleteMessages(pool);
  ({ sourceId, destinationId } = await seedSourceAndDestination(pool, t0));
});

const enqueue = (pool: Pool) => enqueueOne(pool, sourceId, t0);

async function claimOne(pool: Pool, now = t0): Promise<ClaimedDelivery> {
  const { deliveries } = await claimDeliveries(pool, {
    now,
    limit: 1,
    perDestinationLimit: 1,
    room: new Map(),
    leaseMs: minute,
    owner: "a",
  });
  return deliveries[0]!;
}

function completion(job: ClaimedDelivery, status: DeliveryStatus): DeliveryCompletion {
  return {
    destinationId: job.destinationId,
    id: job.id,
    leaseToken: job.leaseToken,
    status,
    runAt: t0,
    attempted: true,
    attemptedAt: t0,
    retryUrls: null,
    attempts: [
      {
        urlIndex: 0,
        url: "https://example.com/hook",
        attemptedAt: t0,
        outcome: status === "delivered" ? "success" : "retryable",
        statusCode: status === "delivered" ? 200 : 503,
        error: null,
        latencyMs: 5,
        responseBody: null,
      },
    ],
  };
}

async function finishedXid(pool: Pool, id: string): Promise<string | null> {
  return (await pool.query<{ x: string | null }>("SELECT finished_xid::text AS x FROM deliveries WHERE id = $1", [id])).rows[0]!.x;
}

/** Runs `work` in a transaction and returns that transaction's id. */
async function inTransaction(pool: Pool, work: (db: Queryable) => Promise<unknown>): Promise<string> {
  return withTransaction(pool, async (client) => {
    const xid = (await client.query<{ x: string }>("SELECT pg_current_xact_id()::text AS x")).rows[0]!.x;
    await work(client);
    return xid;
  });
}

test("a completion stamps the transaction that finished the delivery; a retry leaves it unstamped", async ({ pool }) => {
  const retried = await enqueue(pool);
  const job = await claimOne(pool);
  expect(job.id).toBe(retried.id);
  await inTransaction(pool, (db) => completeDeliveries(db, [completion(job, "retrying")]));
  expect(await finishedXid(pool, retried.id)).toBeNull();

  const again = await claimOne(pool);
  const xid = await inTransaction(pool, (db) => completeDeliveries(db, [completion(again, "delivered")]));
  expect(await finishedXid(pool, retried.id)).toBe(xid);
});

test("a replay clears the stamp and a cancellation sets it", async ({ pool }) => {
  const { id } = await enqueue(pool);
  const job = await claimOne(pool);
  await completeDeliveries(pool, [completion(job, "failed")]);
  expect(await finishedXid(pool, id)).not.toBeNull();

  expect(await replayDelivery(pool, destinationId, id, t0)).toBe(true);
  expect(await finishedXid(pool, id)).toBeNull();

  const xid = await inTransaction(pool, (db) => cancelDestinationDeliveries(db, destinationId, t0));
  expect(await finishedXid(pool, id)).toBe(xid);
});

test("a final status cannot be written into the queue, nor a waiting one into the history: finishing goes through the job table", async ({
  pool,
}) => {
  const { id } = await enqueue(pool);
  await expect(pool.query("UPDATE delivery_queue SET status = 'cancelled' WHERE id = $1", [id])).rejects.toThrow(
    /delivery_queue_status_check/,
  );
  const job = await claimOne(pool);
  await completeDeliveries(pool, [completion(job, "delivered")]);
  expect((await pool.query("SELECT count(*)::int AS n FROM delivery_queue WHERE id = $1", [id])).rows[0].n).toBe(0);
  await expect(pool.query("UPDATE delivery_history SET status = 'retrying' WHERE id = $1", [id])).rejects.toThrow(
    /delivery_history_status_check/,
  );
});

test("attempt rows are deleted with their delivery's message, queued or finished", async ({ pool }) => {
  const attemptsOf = async (id: string) =>
    (await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM delivery_attempts WHERE delivery_id = $1", [id])).rows[0]!.n;
  const deliveriesOf = async (id: string) =>
    (await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deliveries WHERE id = $1", [id])).rows[0]!.n;
  const finished = await enqueue(pool);
  await completeDeliveries(pool, [completion(await claimOne(pool), "delivered")]);
  const kept = await enqueue(pool);
  await completeDeliveries(pool, [completion(await claimOne(pool), "delivered")]);
  const waiting = await enqueue(pool);
  await completeDeliveries(pool, [completion(await claimOne(pool), "retrying")]);
  for (const one of [finished, waiting, kept]) expect(await attemptsOf(one.id)).toBe(1);

  // Deleting messages takes their deliveries (in the queue and in the
  // history) and those deliveries' attempts along, in one transaction.
  expect(await deleteMessages(pool, "message_id = ANY($1)", [[finished.messageId, waiting.messageId]])).toBe(2);
  for (const gone of [finished, waiting]) {
    expect(await attemptsOf(gone.id)).toBe(0);
    expect(await deliveriesOf(gone.id)).toBe(0);
  }
  expect(await attemptsOf(kept.id)).toBe(1);
  expect(await deliveriesOf(kept.id)).toBe(1);
});

test("a completion's times, URLs, errors and response bodies are stored exactly", async ({ pool }) => {
  const { id } = await enqueue(pool);
  const job = await claimOne(pool);
  const attemptedAt = new Date("2026-11-01T00:00:01.987Z");
  const runAt = new Date("2026-11-01T00:10:00.001Z");
  const odd = 'quote " backslash \\ newline \n tab \t emoji 🛰 e\u0301 <tag> \u2028';
  await completeDeliveries(pool, [
    {
      ...completion(job, "retrying"),
      runAt,
      attemptedAt,
      retryUrls: ['https://example.com/a?x="1"', "https://example.com/b"],
      attempts: [
        {
          urlIndex: 0,
          url: 'https://example.com/a?x="1"',
          attemptedAt,
          outcome: "retryable",
          statusCode: 503,
          error: odd,
          latencyMs: 7,
          responseBody: odd,
        },
        {
          urlIndex: 1,
          url: "https://example.com/b",
          attemptedAt,
          outcome: "retryable",
          statusCode: null,
          error: null,
          latencyMs: 0,
          responseBody: null,
        },
      ],
    },
  ]);
  const delivery = await pool.query("SELECT run_at, first_attempt_at, finalized_at, retry_urls FROM deliveries WHERE id = $1", [id]);
  expect(delivery.rows[0]).toEqual({
    run_at: runAt,
    first_attempt_at: attemptedAt,
    finalized_at: null,
    retry_urls: ['https://example.com/a?x="1"', "https://example.com/b"],
  });
  const attempts = await pool.query(
    "SELECT url_index, url, attempted_at, outcome, status_code, error, latency_ms, response_body FROM delivery_attempts WHERE delivery_id = $1 ORDER BY url_index",
    [id],
  );
  expect(attempts.rows).toEqual([
    {
      url_index: 0,
      url: 'https://example.com/a?x="1"',
      attempted_at: attemptedAt,
      outcome: "retryable",
      status_code: 503,
      error: odd,
      latency_ms: 7,
      response_body: odd,
    },
    {
      url_index: 1,
      url: "https://example.com/b",
      attempted_at: attemptedAt,
      outcome: "retryable",
      status_code: null,
      error: null,
      latency_ms: 0,
      response_body: null,
    },
  ]);

  const again = await claimOne(pool, runAt);
  const finishedAt = new Date("2026-11-01T00:10:00.999Z");
  await completeDeliveries(pool, [{ ...completion(again, "delivered"), attemptedAt: finishedAt }]);
  const finished = await pool.query("SELECT status, finalized_at, retry_urls FROM deliveries WHERE id = $1", [id]);
  expect(finished.rows[0]).toEqual({ status: "delivered", finalized_at: finishedAt, retry_urls: null });
});
