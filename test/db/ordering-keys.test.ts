import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { replayDelivery } from "../../src/db/job-table/index.js";
import { inTransaction, type Pool, type Queryable } from "../../src/db/pool.js";
import { keyQueuedDeliveries } from "../../src/db/job-table/ordering-keys.js";
import { storeMessages, type MessageToStore } from "../../src/db/job-table/store-messages.js";
import { testWith } from "../helpers/fixtures.js";
import { finishByHand, seedSourceAndDestination } from "../helpers/job-table-fixtures.js";

// Ingest writes a delivery's user key only when its destination orders per
// user; turning ordering on keys the deliveries already queued, including
// those of a store that read the setting before the change.
const test = testWith();
let sourceId: string;
let destinationId: string;
const at = new Date("2026-11-28T10:00:00Z");

test.beforeEach(async ({ pool }) => {
  ({ sourceId, destinationId } = await seedSourceAndDestination(pool, at));
});

const call = (userId: string, anonymousId = ""): MessageToStore => ({
  messageId: randomUUID(),
  type: "track",
  userId,
  anonymousId,
  payload: JSON.stringify({ userId, anonymousId }),
  integrations: undefined,
});

async function keys(pool: Queryable): Promise<Array<string | null>> {
  const rows = await pool.query<{ ordering_key: string | null }>(
    "SELECT ordering_key FROM delivery_queue WHERE destination_id = $1 ORDER BY id",
    [destinationId],
  );
  return rows.rows.map((row) => row.ordering_key);
}

/** Turns per-user ordering on as the destination service does: the update, then the queued deliveries' keys, in one transaction. */
const orderPerUser = (db: Queryable) =>
  inTransaction(db, async (tx) => {
    await tx.query("UPDATE destinations SET ordering = 'per_user' WHERE id = $1", [destinationId]);
    return keyQueuedDeliveries(tx, destinationId);
  });

test("a destination that does not order gets no keys; turning ordering on keys its queued deliveries", async ({ pool }) => {
  await storeMessages(pool, sourceId, at, [call("u1"), call("", "anon-1"), call("u2")]);
  expect(await keys(pool)).toEqual([null, null, null]);
  expect(await orderPerUser(pool)).toBe(3);
  // The anonymous call's key comes from its stored body, as ingest took it from the call.
  expect(await keys(pool)).toEqual(["u1", "anon-1", "u2"]);
  await storeMessages(pool, sourceId, at, [call("u3")]);
  expect(await keys(pool)).toEqual(["u1", "anon-1", "u2", "u3"]);
});

test("a delivery finished while its destination did not order is keyed when it is replayed after ordering was turned on", async ({
  pool,
}) => {
  await storeMessages(pool, sourceId, at, [call("u1")]);
  const [{ id }] = (await pool.query<{ id: string }>("SELECT id FROM delivery_queue WHERE destination_id = $1", [destinationId])).rows as [
    { id: string },
  ];
  expect(await finishByHand(pool, destinationId, [id], "failed")).toBe(1);
  await orderPerUser(pool);
  expect(await replayDelivery(pool, destinationId, id, at)).toBe(true);
  expect(await keys(pool)).toEqual(["u1"]);
});

test("a store that read the setting before ordering was turned on is keyed once it commits", async ({ pool }) => {
  const store = await pool.connect();
  const setting = await pool.connect();
  try {
    await store.query("BEGIN");
    await storeMessages(store, sourceId, at, [call("early")]);
    // The change waits for the open store (its lock on the queue), then keys what it wrote.
    await setting.query("BEGIN");
    const change = orderPerUser(setting).then(() => setting.query("COMMIT"));
    await waitUntilBlocked(pool, setting);
    await store.query("COMMIT");
    await change;
    expect(await keys(pool)).toEqual(["early"]);
  } finally {
    store.release();
    setting.release();
  }
});

test("a store that starts while ordering is being turned on waits for it and keys its deliveries", async ({ pool }) => {
  const setting = await pool.connect();
  const store = await pool.connect();
  try {
    await setting.query("BEGIN");
    await orderPerUser(setting);
    const stored = storeMessages(store, sourceId, at, [call("late")]);
    await waitUntilBlocked(pool, store);
    await setting.query("COMMIT");
    await stored;
    expect(await keys(pool)).toEqual(["late"]);
  } finally {
    setting.release();
    store.release();
  }
});

/** Resolves once the connection's backend waits for a lock. */
async function waitUntilBlocked(pool: Pool, client: object): Promise<void> {
  // pg keeps the backend's pid on the client; its typings do not declare it.
  const pid = (client as { processID?: number }).processID;
  for (;;) {
    const result = await pool.query<{ waiting: boolean }>(
      "SELECT wait_event_type = 'Lock' AS waiting FROM pg_stat_activity WHERE pid = $1",
      [pid],
    );
    if (result.rows[0]?.waiting) return;
    await pool.query("SELECT pg_sleep(0.01)");
  }
}
