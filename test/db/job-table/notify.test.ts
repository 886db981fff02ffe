import { randomUUID } from "node:crypto";
import pg from "pg";
import { expect } from "vitest";
import { claimDeliveries, completeDeliveries, deliveriesChannel, replayDelivery, wakeWorkers } from "../../../src/db/job-table/index.js";
import { queueDeleteNotifications } from "../../../src/db/queries/deletion-notifications.js";
import { insertDeletionRequest } from "../../../src/db/queries/deletion-requests.js";
import { storeMessages } from "../../../src/db/job-table/store-messages.js";
import { testWith } from "../../helpers/fixtures.js";

const test = testWith();

const t0 = new Date("2026-11-01T00:00:00Z");
let listener: pg.Client;
let received: string[] = [];
let sourceId: string;
let quietSourceId: string;
let destinationId: string;

test.beforeAll(async ({ database, pool }) => {
  listener = new pg.Client({ connectionString: database.url });
  await listener.connect();
  listener.on("notification", (n) => received.push(n.channel));
  await listener.query(`LISTEN ${deliveriesChannel}`);
  sourceId = randomUUID();
  quietSourceId = randomUUID();
  destinationId = randomUUID();
  for (const id of [sourceId, quietSourceId]) {
    await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', $2)", [id, Buffer.from(id)]);
  }
  await pool.query(
    `INSERT INTO destinations (id, name, enabled, webhooks, created_at, updated_at)
     VALUES ($1, 'hook', true, '[{"url":"https://example.com/hook","headers":{}}]', $2, $2)`,
    [destinationId, t0],
  );
  await pool.query("INSERT INTO destination_sources (source_id, destination_id) VALUES ($1, $2)", [sourceId, destinationId]);
});
test.afterAll(async () => {
  await listener?.end();
});

/**
 * The notifications that arrived for what has committed so far. A committed
 * NOTIFY reaches the listening session before it answers its next query, so
 * one round trip on the listener is enough to have them all.
 */
async function wakeups(): Promise<string[]> {
  await listener.query("SELECT 1");
  const got = received;
  received = [];
  return got;
}

function message(messageId: string) {
  return { messageId, type: "track", userId: "u", payload: "{}", integrations: undefined };
}

test("ingest says whether it queued deliveries and leaves the wake-up to its caller", async ({ pool }) => {
  await wakeups();
  const messageId = randomUUID();
  expect((await storeMessages(pool, sourceId, t0, [message(messageId)])).queued).toBe(true);
  // A repeat queues nothing; a source without destinations neither.
  expect((await storeMessages(pool, sourceId, t0, [message(messageId)])).queued).toBe(false);
  expect((await storeMessages(pool, quietSourceId, t0, [message(randomUUID())])).queued).toBe(false);
  // No NOTIFY in the statement: the ingestor's throttled NOTIFY sends them, coalesced (test/background/throttled-notify.test.ts).
  expect(await wakeups()).toEqual([]);
  const queued = await pool.query("SELECT status, lease_owner FROM deliveries WHERE source_id = $1", [sourceId]);
  expect(queued.rows).toEqual([{ status: "pending", lease_owner: null }]);
});

test("delete notifications are queued through the same enqueue and wake the loops", async ({ pool }) => {
  await wakeups();
  const deletionId = randomUUID();
  await insertDeletionRequest(pool, { id: deletionId, userId: "u", sourceIds: [sourceId], messagesDeleted: 0, createdAt: t0 });
  const count = await queueDeleteNotifications(pool, {
    deletionRequestId: deletionId,
    sourceIds: [sourceId, quietSourceId],
    userId: "u",
    payload: "{}",
    at: t0,
  });
  expect(count).toBe(1);
  expect(await wakeups()).toEqual([deliveriesChannel]);
});

test("a replay and an enabled destination wake the loops", async ({ pool }) => {
  const {
    deliveries: [job],
  } = await claimDeliveries(pool, { now: t0, limit: 1, perDestinationLimit: 1, room: new Map(), leaseMs: 60_000, owner: "a" });
  await completeDeliveries(pool, [
    {
      destinationId,
      id: job!.id,
      leaseToken: job!.leaseToken,
      status: "failed",
      runAt: t0,
      attempted: true,
      attemptedAt: t0,
      retryUrls: null,
      attempts: [],
    },
  ]);
  await wakeups();
  expect(await replayDelivery(pool, destinationId, job!.id, t0)).toBe(true);
  expect(await wakeups()).toEqual([deliveriesChannel]);
  await wakeWorkers(pool);
  expect(await wakeups()).toEqual([deliveriesChannel]);
});
