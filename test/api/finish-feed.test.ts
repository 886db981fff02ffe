import { expect } from "vitest";
import { DeliveryOrder, DeliveryStatus } from "../../gen/waypost/v1/delivery_pb.js";
import type { Queryable } from "../../src/db/pool.js";
import { testWith } from "../helpers/fixtures.js";
import { finishByHand, reopenByHand } from "../helpers/job-table-fixtures.js";
import type { TestServer } from "../helpers/server.js";

const test = testWith();
let sourceId: string;
let writeKey: string;
let okId: string;
let pausedId: string;

test.beforeAll(async ({ server, receiver: ok }) => {
  ({ id: sourceId, writeKey } = await server.createSource());
  okId = (await server.createDestination({ name: "ok", enabled: true, sourceIds: [sourceId], webhooks: [{ url: ok.url }] })).id;
  // Disabled: nothing claims its deliveries, so the tests finish them by hand.
  pausedId = (await server.createDestination({ name: "paused", enabled: false, sourceIds: [], webhooks: [{ url: ok.url }] })).id;
});

async function poll(server: TestServer, destinationId: string, pageToken: string, pageSize = 0) {
  const page = await server.deliveries.listDeliveries({ order: DeliveryOrder.FINISH_TIME_DESC, destinationId, pageToken, pageSize });
  expect(page.nextPageToken).not.toBe("");
  return { ids: page.deliveries.map((d) => d.id), deliveries: page.deliveries, token: page.nextPageToken };
}

/** Pending deliveries of the paused destination, inserted directly. */
async function pendingDeliveries(server: TestServer, count: number): Promise<string[]> {
  const result = await server.pool.query<{ id: string }>(
    `WITH m AS (
       INSERT INTO messages (source_id, message_id, type, received_at, payload)
       SELECT $1, 'feed-' || gen_random_uuid(), 'track', now(), '{"type":"track"}' FROM generate_series(1, $3)
       RETURNING id
     )
     INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at)
     SELECT $2, m.id, $1, now(), now() FROM m RETURNING id::text`,
    [sourceId, pausedId, count],
  );
  return result.rows.map((r) => r.id).sort((a, b) => Number(a) - Number(b));
}

const finish = (db: Queryable, ids: string[]) => finishByHand(db, pausedId, ids, "delivered");

test("a poller sees every delivery that finished since its last poll, once, newest first", async ({ server }) => {
  let { ids, token } = await poll(server, okId, "");
  expect(ids).toEqual([]);
  const client = server.tracking(writeKey);
  let done = server.waitForDeliveries(5);
  for (let i = 0; i < 5; i++) await client.track({ track: { userId: `u${i}`, event: "feed" } });
  const finished = (await done).map((c) => c.id);
  const first = await poll(server, okId, token);
  expect([...first.ids].sort()).toEqual([...finished].sort());
  expect(first.deliveries.every((d) => d.status === DeliveryStatus.DELIVERED && d.body !== "")).toBe(true);
  ({ ids, token } = await poll(server, okId, first.token));
  expect(ids).toEqual([]);
  done = server.waitForDeliveries(2);
  for (let i = 0; i < 2; i++) await client.track({ track: { userId: `v${i}`, event: "feed" } });
  const more = (await done).map((c) => c.id);
  const second = await poll(server, okId, token);
  expect([...second.ids].sort()).toEqual([...more].sort());
  // Without a token: the most recent finishes, newest first.
  const start = await poll(server, okId, "", 3);
  expect(start.ids).toHaveLength(3);
  expect(start.ids.every((id) => [...finished, ...more].includes(id))).toBe(true);
});

test("a finish that commits after a later one is still seen, once", async ({ server }) => {
  const [early, late] = await pendingDeliveries(server, 2);
  const start = await poll(server, pausedId, "");
  const slow = await server.pool.connect();
  try {
    // The slow transaction finishes `early` first (its transaction id is older) but commits last.
    await slow.query("BEGIN");
    await finish(slow, [early!]);
    await finish(server.pool, [late!]);
    const first = await poll(server, pausedId, start.token);
    expect(first.ids).toEqual([late]);
    await slow.query("COMMIT");
    const second = await poll(server, pausedId, first.token);
    expect(second.ids).toEqual([early]);
    expect((await poll(server, pausedId, second.token)).ids).toEqual([]);
  } finally {
    slow.release();
  }
});

test("a burst larger than a page comes in pages, each delivery once, then what finished meanwhile", async ({ server }) => {
  const burst = await pendingDeliveries(server, 7);
  const [meanwhile] = await pendingDeliveries(server, 1);
  let { token } = await poll(server, pausedId, "");
  await finish(server.pool, burst);
  const pages: string[][] = [];
  let page = await poll(server, pausedId, token, 3);
  pages.push(page.ids);
  // Finishes while the burst is being paged: it comes after the burst.
  await finish(server.pool, [meanwhile!]);
  while (page.ids.length > 0) {
    page = await poll(server, pausedId, page.token, 3);
    pages.push(page.ids);
  }
  token = page.token;
  const seen = pages.flat();
  expect(pages.slice(0, 3).map((p) => p.length)).toEqual([3, 3, 1]);
  expect([...seen].sort()).toEqual([...burst, meanwhile].sort());
  expect(new Set(seen).size).toBe(seen.length);
  expect(seen.at(-1)).toBe(meanwhile);
  expect((await poll(server, pausedId, token)).ids).toEqual([]);
});

test("a replayed delivery that finishes again is seen again", async ({ server }) => {
  const [id] = await pendingDeliveries(server, 1);
  let { token } = await poll(server, pausedId, "");
  await finishByHand(server.pool, pausedId, [id!], "failed");
  let page = await poll(server, pausedId, token);
  expect(page.ids).toEqual([id]);
  await reopenByHand(server.pool, pausedId, [id!]);
  page = await poll(server, pausedId, page.token);
  expect(page.ids).toEqual([]);
  await finishByHand(server.pool, pausedId, [id!], "delivered");
  page = await poll(server, pausedId, page.token);
  expect(page.ids).toEqual([id]);
  token = page.token;
  expect((await poll(server, pausedId, token)).ids).toEqual([]);
});
