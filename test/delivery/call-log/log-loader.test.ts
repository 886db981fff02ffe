import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { singleNodeJobTable } from "../../../src/db/job-table/index.js";
import { testWith } from "../../helpers/fixtures.js";
import type { TestServer } from "../../helpers/server.js";
import { type Receiver, startReceiver } from "../../helpers/receiver.js";
import { verifyStandardWebhook } from "../../helpers/standard-webhooks.js";

// The call log on: destinations of the batching kinds read calls by cursor.
const test = testWith({ server: { config: { delivery: { callLog: true, pollIntervalMs: 200 } } } });
const receivers: Receiver[] = [];
test.afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

async function batchedWebhook(server: TestServer, respond: (index: number, body: string) => number = () => 200) {
  const receiver = await startReceiver({ respond: (request, index) => ({ status: respond(index, request.body) }) });
  receivers.push(receiver);
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "batched",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url, batch: { maxCalls: 50, maxWaitMs: 60_000 } }],
    signingSecrets: [secret],
  });
  // Moved onto the log now rather than at the next sync.
  await server.waypost.delivery!.syncCallLog();
  return { receiver, source, destination, client: server.tracking(source.writeKey) };
}

const trackCall = (messageId: string, userId: string) => ({ type: { case: "track" as const, value: { messageId, userId, event: "E" } } });
const secret = `whsec_${randomBytes(32).toString("base64")}`;
const callsIn = (body: string): Array<{ messageId: string; userId?: string }> => JSON.parse(body).batch;

test("a batched webhook on the log gets every call once, in batches, with no queue row per call", async ({ server }) => {
  const { receiver, destination, client } = await batchedWebhook(server);
  const layout = await server.pool.query("SELECT delivery_layout FROM destinations WHERE id = $1", [destination.id]);
  expect(layout.rows[0].delivery_layout).toBe("log");
  const ids = Array.from({ length: 120 }, (_, i) => `m-${i}`);
  await client.batch({ batch: ids.map((messageId) => trackCall(messageId, `u${messageId}`)) });
  const queued = await server.pool.query("SELECT count(*)::int AS n FROM delivery_queue WHERE destination_id = $1", [destination.id]);
  expect(queued.rows[0].n).toBe(0);
  await server.waypost.delivery!.settle();
  const received = receiver.requests.flatMap((r) => callsIn(r.body).map((c) => c.messageId));
  expect(received.sort()).toEqual([...ids].sort());
  expect(receiver.requests.length).toBeGreaterThanOrEqual(3);
  for (const request of receiver.requests) expect(verifyStandardWebhook(secret, request, new Date())).toEqual(JSON.parse(request.body));
  const batches = await server.pool.query<{ delivered: number }>(
    "SELECT sum(delivered)::int AS delivered, sum(calls)::int AS calls FROM log_batches WHERE destination_id = $1",
    [destination.id],
  );
  expect(batches.rows[0]).toEqual({ delivered: 120, calls: 120 });
});

test("a batch that fails as a whole holds the cursor and is sent again, the same calls", async ({ server }) => {
  let fail = true;
  const { receiver, destination, client } = await batchedWebhook(server, () => (fail ? 503 : 200));
  await client.batch({ batch: Array.from({ length: 10 }, (_, i) => trackCall(`h-${i}`, "u")) });
  await server.waypost.delivery!.settle();
  const cursor = await server.pool.query("SELECT failures, last_error FROM log_cursors WHERE destination_id = $1", [destination.id]);
  expect(cursor.rows[0].failures).toBe(1);
  expect(receiver.requests.length).toBe(1);
  const batches = await server.pool.query("SELECT count(*)::int AS n FROM log_batches WHERE destination_id = $1", [destination.id]);
  expect(batches.rows[0].n).toBe(0);
  // The page's failures count towards endpoint health, as per-call failures do.
  const health = () => server.pool.query("SELECT consecutive_failures FROM destination_health WHERE destination_id = $1", [destination.id]);
  expect((await health()).rows[0].consecutive_failures).toBe(10);
  fail = false;
  await server.pool.query("UPDATE log_cursors SET run_at = now() WHERE destination_id = $1", [destination.id]);
  server.waypost.delivery!.poke();
  await server.waypost.delivery!.settle();
  expect(receiver.requests.length).toBe(2);
  expect(callsIn(receiver.requests[1]!.body).map((c) => c.messageId)).toEqual(callsIn(receiver.requests[0]!.body).map((c) => c.messageId));
  expect(receiver.requests[1]!.headers["webhook-id"]).toBe(receiver.requests[0]!.headers["webhook-id"]);
  const after = await server.pool.query("SELECT failures FROM log_cursors WHERE destination_id = $1", [destination.id]);
  expect(after.rows[0].failures).toBe(0);
  expect((await health()).rows[0].consecutive_failures).toBe(0);
});

test("a backfill of a destination on the log finds only the calls its cursor never read: those stored before it was connected", async ({
  server,
}) => {
  const receiver = await startReceiver();
  receivers.push(receiver);
  const source = await server.createSource();
  const client = server.tracking(source.writeKey);
  const since = new Date(Date.now() - 60_000);
  await client.batch({ batch: Array.from({ length: 4 }, (_, i) => trackCall(`before-${i}`, "u")) });
  const destination = await server.createDestination({
    name: "late",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url, batch: { maxCalls: 50, maxWaitMs: 60_000 } }],
  });
  await client.batch({ batch: Array.from({ length: 6 }, (_, i) => trackCall(`after-${i}`, "u")) });
  const range = { destinationId: destination.id, since, until: new Date(Date.now() + 60_000) };
  // Not read yet: the cursor will send them, a backfill must not.
  expect(await singleNodeJobTable.reads.countBackfillCandidates(server.pool, range)).toBe(4);
  await server.waypost.delivery!.settle();
  expect(receiver.requests.flatMap((r) => callsIn(r.body).map((c) => c.messageId)).sort()).toEqual(
    Array.from({ length: 6 }, (_, i) => `after-${i}`),
  );
  // Delivered by the log: still only the four stored before the connection.
  const candidates = await singleNodeJobTable.reads.selectBackfillCandidates(server.pool, range, "0", 100, false);
  const ids = await server.pool.query<{ message_id: string }>("SELECT message_id FROM messages WHERE id = ANY($1::bigint[]) ORDER BY 1", [
    candidates.map((c) => c.id),
  ]);
  expect(ids.rows.map((r) => r.message_id)).toEqual(Array.from({ length: 4 }, (_, i) => `before-${i}`));
});

test("a burst that ends on a full page (the read after it empty) leaves the cursor free to read the calls stored after", async ({
  server,
}) => {
  const { receiver, destination, client } = await batchedWebhook(server);
  // Disabled while a whole page (the loader's 1,000) is stored: its first burst then reads exactly one full page.
  await server.destinations.updateDestination({ destination: { id: destination.id, enabled: false }, updateMask: { paths: ["enabled"] } });
  const first = Array.from({ length: 1_000 }, (_, i) => `full-${i}`);
  for (let i = 0; i < first.length; i += 250) {
    await client.batch({ batch: first.slice(i, i + 250).map((id) => trackCall(id, `u-${id}`)) });
  }
  await server.destinations.updateDestination({ destination: { id: destination.id, enabled: true }, updateMask: { paths: ["enabled"] } });
  server.waypost.delivery!.poke();
  await server.waypost.delivery!.settle();
  expect(receiver.requests.flatMap((r) => callsIn(r.body)).length).toBe(1_000);
  const later = Array.from({ length: 7 }, (_, i) => `later-${i}`);
  await client.batch({ batch: later.map((id) => trackCall(id, `u-${id}`)) });
  await server.waypost.delivery!.settle();
  const received = receiver.requests.flatMap((r) => callsIn(r.body).map((c) => c.messageId));
  expect(received.slice(1_000).sort()).toEqual([...later].sort());
  const cursor = await server.pool.query("SELECT up_to FROM log_cursors WHERE destination_id = $1", [destination.id]);
  expect(cursor.rows[0].up_to).toBeNull();
});

test("two pages with the kind at once: when the first fails as a whole the cursor holds there, and the second, already sent, goes again after it as the same batches", async ({
  server,
}) => {
  let failFirstPage = true;
  const { receiver, destination, client } = await batchedWebhook(server, (_, body) =>
    failFirstPage && callsIn(body).some((c) => c.messageId.startsWith("p1-")) ? 503 : 200,
  );
  await server.destinations.updateDestination({ destination: { id: destination.id, enabled: false }, updateMask: { paths: ["enabled"] } });
  // Two full pages of the loader's 1,000: p1-… then p2-….
  for (const page of ["p1", "p2"]) {
    const ids = Array.from({ length: 1_000 }, (_, i) => `${page}-${String(i).padStart(4, "0")}`);
    for (let i = 0; i < ids.length; i += 250) await client.batch({ batch: ids.slice(i, i + 250).map((id) => trackCall(id, `u-${id}`)) });
  }
  await server.destinations.updateDestination({ destination: { id: destination.id, enabled: true }, updateMask: { paths: ["enabled"] } });
  server.waypost.delivery!.poke();
  await server.waypost.delivery!.settle();
  const cursor = await server.pool.query("SELECT failures FROM log_cursors WHERE destination_id = $1", [destination.id]);
  expect(cursor.rows[0].failures).toBe(1);
  expect(
    (await server.pool.query("SELECT count(*)::int AS n FROM log_batches WHERE destination_id = $1", [destination.id])).rows[0].n,
  ).toBe(0);
  // Every POST made is an attempt row, the second page's successes too.
  const attempts = await server.pool.query("SELECT count(*)::int AS n FROM delivery_batch_attempts WHERE destination_id = $1", [
    destination.id,
  ]);
  expect(attempts.rows[0].n).toBe(receiver.requests.length);
  // The second page went while the first was still being sent.
  expect(receiver.requests.some((r) => callsIn(r.body).some((c) => c.messageId.startsWith("p2-")))).toBe(true);
  const firstTry = new Map(
    receiver.requests.map((r) => [
      r.headers["webhook-id"],
      callsIn(r.body)
        .map((c) => c.messageId)
        .join(),
    ]),
  );
  failFirstPage = false;
  await server.pool.query("UPDATE log_cursors SET run_at = now() WHERE destination_id = $1", [destination.id]);
  server.waypost.delivery!.poke();
  await server.waypost.delivery!.settle();
  const batches = await server.pool.query("SELECT sum(delivered)::int AS n FROM log_batches WHERE destination_id = $1", [destination.id]);
  expect(batches.rows[0].n).toBe(2_000);
  // Sent again as the same batches: a POST of the retry with a webhook-id seen before carries the same calls.
  const retried = receiver.requests.slice(firstTry.size);
  const delivered = new Set(retried.flatMap((r) => callsIn(r.body).map((c) => c.messageId)));
  expect(delivered.size).toBe(2_000);
  for (const r of retried) {
    const before = firstTry.get(r.headers["webhook-id"]);
    if (before !== undefined)
      expect(
        callsIn(r.body)
          .map((c) => c.messageId)
          .join(),
      ).toBe(before);
  }
  expect(retried.filter((r) => firstTry.has(r.headers["webhook-id"]) && r.body.includes('"p2-')).length).toBeGreaterThan(0);
});
