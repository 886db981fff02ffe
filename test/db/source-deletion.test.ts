import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { NotFoundError } from "../../src/errors.js";
import type { Pool } from "../../src/db/pool.js";
import { deleteSourceRow } from "../../src/db/queries/sources.js";
import { storeMessages, type MessageToStore } from "../../src/db/job-table/store-messages.js";
import { testWith } from "../helpers/fixtures.js";
import { finishByHand, seedSourceAndDestination } from "../helpers/job-table-fixtures.js";

// Messages carry no foreign key to their source (it cost a probe and a row
// lock per message stored): deleting a source deletes its messages once per
// statement, and a store locks its source once, so no message outlives it.
const test = testWith();
let sourceId: string;
let destinationId: string;
const at = new Date("2026-11-28T10:00:00Z");

test.beforeEach(async ({ pool }) => {
  ({ sourceId, destinationId } = await seedSourceAndDestination(pool, at));
});

const call = (): MessageToStore => ({ messageId: randomUUID(), type: "track", userId: "u", payload: "{}", integrations: undefined });

async function counts(pool: Pool, source: string) {
  const result = await pool.query<{ messages: number; queued: number; finished: number }>(
    `SELECT (SELECT count(*)::int FROM messages WHERE source_id = $1) AS messages,
            (SELECT count(*)::int FROM delivery_queue WHERE source_id = $1) AS queued,
            (SELECT count(*)::int FROM delivery_history WHERE source_id = $1) AS finished`,
    [source],
  );
  return result.rows[0]!;
}

test("deleting a source deletes its messages and their deliveries, queued and finished, and no other source's", async ({ pool }) => {
  const other = await seedSourceAndDestination(pool, at);
  await storeMessages(pool, sourceId, at, [call(), call(), call()]);
  await storeMessages(pool, other.sourceId, at, [call()]);
  const ids = (await pool.query<{ id: string }>("SELECT id FROM delivery_queue WHERE source_id = $1 LIMIT 1", [sourceId])).rows;
  expect(await finishByHand(pool, destinationId, [ids[0]!.id], "delivered")).toBe(1);
  expect(await counts(pool, sourceId)).toEqual({ messages: 3, queued: 2, finished: 1 });
  expect(await deleteSourceRow(pool, sourceId)).toBe(true);
  expect(await counts(pool, sourceId)).toEqual({ messages: 0, queued: 0, finished: 0 });
  expect(await counts(pool, other.sourceId)).toEqual({ messages: 1, queued: 1, finished: 0 });
});

test("a store for a source deleted meanwhile stores nothing and says the source is not found", async ({ pool }) => {
  await deleteSourceRow(pool, sourceId);
  const error = await storeMessages(pool, sourceId, at, [call()]).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(NotFoundError);
  expect(String(error)).toContain(sourceId);
  expect(await counts(pool, sourceId)).toEqual({ messages: 0, queued: 0, finished: 0 });
});

test("a source's deletion waits for a store still open, then deletes what it stored", async ({ pool }) => {
  const store = await pool.connect();
  try {
    await store.query("BEGIN");
    await storeMessages(store, sourceId, at, [call(), call()]);
    const deletion = deleteSourceRow(pool, sourceId);
    await waitForLockWaiter(pool, deletion, "the deletion did not wait for the open store");
    await store.query("COMMIT");
    expect(await deletion).toBe(true);
    expect(await counts(pool, sourceId)).toEqual({ messages: 0, queued: 0, finished: 0 });
  } finally {
    store.release();
  }
});

test("a store that starts while its source is being deleted stores nothing", async ({ pool }) => {
  const deleting = await pool.connect();
  try {
    await deleting.query("BEGIN");
    await deleteSourceRow(deleting, sourceId);
    const stored = storeMessages(pool, sourceId, at, [call()]).catch((e: unknown) => e);
    await waitForLockWaiter(pool, stored, "the store did not wait for the deletion");
    await deleting.query("COMMIT");
    expect(await stored).toBeInstanceOf(NotFoundError);
    expect(await counts(pool, sourceId)).toEqual({ messages: 0, queued: 0, finished: 0 });
  } finally {
    deleting.release();
  }
});

/** Resolves once some backend of this database waits for a lock; fails if `waiter` settles first. */
async function waitForLockWaiter(pool: Pool, waiter: Promise<unknown>, otherwise: string): Promise<void> {
  let settled = false;
  const mark = () => {
    settled = true;
  };
  waiter.then(mark, mark);
  for (;;) {
    if (settled) throw new Error(otherwise);
    const result = await pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    );
    if (result.rows[0]!.n > 0) return;
    await pool.query("SELECT pg_sleep(0.01)");
  }
}
