import { randomUUID } from "node:crypto";
import { once } from "node:events";
import pg from "pg";
import { expect } from "vitest";
import { systemClock } from "../../src/clock.js";
import { emptyCall } from "../../src/calls/call.js";
import { matcherOfRow } from "../../src/delivery/kinds/registry.js";
import { createIngestor } from "../../src/ingest/ingestor.js";
import { deliveriesChannel, singleNodeJobTable } from "../../src/db/job-table/index.js";
import { testWith } from "../helpers/fixtures.js";
import { startTestServer } from "../helpers/server.js";
import { seedSourceAndDestination } from "../helpers/job-table-fixtures.js";

// The ingest statement no longer NOTIFYs: the ingestor tells its caller (the
// server's loop waker) once a store that queued deliveries has committed.
let sourceId: string;

const test = testWith();
test.beforeAll(async ({ pool }) => {
  ({ sourceId } = await seedSourceAndDestination(pool, new Date()));
});

function track(messageId: string) {
  return { ...emptyCall("track"), messageId, userId: "u", event: "Order Completed" };
}

test("the ingestor says when a store queued deliveries, after it committed, and only then", async ({ pool }) => {
  const wakes: number[] = [];
  const ingestor = createIngestor({
    pool,
    jobTable: singleNodeJobTable,
    clock: systemClock,
    onQueued: () => wakes.push(wakes.length),
    kindMatcher: matcherOfRow,
  });
  const messageId = randomUUID();
  const first = await ingestor.ingest(sourceId, [track(messageId)]);
  expect(first.accepted).toBe(1);
  expect(wakes).toHaveLength(1);
  // Committed by then: another connection sees the delivery.
  const { rows } = await pool.query("SELECT count(*)::int AS n FROM delivery_queue WHERE source_id = $1", [sourceId]);
  expect(rows[0].n).toBe(1);
  // A repeated messageId is acknowledged but queues nothing: no wake-up.
  expect((await ingestor.ingest(sourceId, [track(messageId)])).accepted).toBe(1);
  expect(wakes).toHaveLength(1);
  // A rejected call (a track without its event) stores nothing either.
  expect((await ingestor.ingest(sourceId, [{ ...track(randomUUID()), event: "" }])).rejected).toHaveLength(1);
  expect(wakes).toHaveLength(1);
});

test("a Track call to an api process wakes the delivery loops of other processes (LISTEN)", async () => {
  const server = await startTestServer({ config: { role: "api" } });
  const listener = new pg.Client({ connectionString: server.database.url });
  try {
    await listener.connect();
    await listener.query(`LISTEN ${deliveriesChannel}`);
    const source = await server.createSource("wake");
    await server.createDestination({ name: "hook", sourceIds: [source.id], webhooks: [{ url: "http://127.0.0.1:9/hook" }] });
    const woken = once(listener, "notification");
    await server.tracking(source.writeKey).track({ track: { userId: "u", event: "Order Completed" } });
    const [notification] = (await woken) as [pg.Notification];
    expect(notification.channel).toBe(deliveriesChannel);
  } finally {
    await listener.end();
    await server.stop();
  }
});
