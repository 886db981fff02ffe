import { expect } from "vitest";
import { Ordering } from "../../../gen/waypost/v1/destination_pb.js";
import { ManualClock } from "../../../src/clock.js";
import { testWith } from "../../helpers/fixtures.js";
import { eventually } from "../../helpers/process.js";
import { startReceiver, type Receiver, type ReceivedRequest } from "../../helpers/receiver.js";
import type { TestServer } from "../../helpers/server.js";
import { callsIn, createBatchedWebhook, trackCall } from "./log-support.js";

// A call the destination refuses when it is sent alone: the receiver
// answers 413 to any batch holding a marked call, so the batch is split
// down to that call, which then fails alone. It leaves the log as an
// exception delivery row, retried per call; with per-user ordering its
// user's later calls wait behind it. A manual clock makes retries due at once;
// it starts ahead of the database's (a new cursor is due from the database's now()).
const clock = new ManualClock(new Date(Date.now() + 60 * 60_000));
const test = testWith({ server: { clock, config: { delivery: { callLog: true } } } });
const receivers: Receiver[] = [];
test.afterEach(async ({ server }) => {
  await server.waypost.delivery!.settle();
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

/** `big` is refused whenever sent (413); `flaky` is refused in a batch, fails alone (503) while `flaky.failing`, then goes through. */
const flaky = { failing: true };
function respond(request: ReceivedRequest) {
  const ids = callsIn(request).map((c) => c.messageId);
  const marked = ids.some((id) => id.includes("big") || id.includes("flaky"));
  if (marked && ids.length > 1) return { status: 413 };
  if (ids[0]!.includes("big")) return { status: 413 };
  if (ids[0]!.includes("flaky") && flaky.failing) return { status: 503 };
  return { status: 200 };
}

/** Every call each POST answered 200 carried, in the order they arrived. */
const accepted: string[] = [];

async function setup(server: TestServer, ordering = Ordering.NONE) {
  flaky.failing = true;
  accepted.length = 0;
  const receiver = await startReceiver({
    respond: (request) => {
      const plan = respond(request);
      if (plan.status === 200) accepted.push(...callsIn(request).map((c) => c.messageId));
      return plan;
    },
  });
  receivers.push(receiver);
  const source = await server.createSource();
  const destination = await createBatchedWebhook(server, [source.id], receiver.url, 50, { ordering });
  await server.waypost.delivery!.syncCallLog();
  const client = server.tracking(source.writeKey);
  const send = async (calls: Array<[id: string, user: string]>) => {
    await client.batch({ batch: calls.map(([id, user]) => trackCall(id, user)) });
    server.waypost.delivery!.poke();
    await server.waypost.delivery!.settle();
  };
  return { receiver, destination, send };
}

async function deliveryOf(server: TestServer, destinationId: string, messageId: string) {
  const result = await server.pool.query(
    `SELECT d.status, d.attempt_count, d.run_at, d.ordering_key FROM deliveries d JOIN messages m ON m.id = d.message_pk
      WHERE d.destination_id = $1 AND m.message_id = $2`,
    [destinationId, messageId],
  );
  return result.rows[0];
}

/**
 * Makes the exception's next try due, then pokes and settles until the
 * deliveries named are delivered: the per-call loop holds what it claims for
 * a batched URL until the batch's wait (clock time) or a flush, which
 * settle() does.
 */
async function retryUntilDelivered(server: TestServer, destinationId: string, messageId: string, all: string[]) {
  const row = await deliveryOf(server, destinationId, messageId);
  clock.set(new Date(Math.max(row.run_at.getTime(), clock.now().getTime())));
  await eventually(async () => {
    server.waypost.delivery!.poke();
    await server.waypost.delivery!.settle();
    const statuses = await Promise.all(all.map(async (id) => (await deliveryOf(server, destinationId, id))?.status));
    return statuses.every((status) => status === "delivered");
  });
}

test("a call failing alone becomes an exception row: failed for good, or retried alone; the rest are delivered", async ({ server }) => {
  const { receiver, destination, send } = await setup(server);
  const calls = Array.from({ length: 12 }, (_, i): [string, string] => [i === 3 ? "big-3" : i === 8 ? "flaky-8" : `ok-${i}`, `u${i}`]);
  await send(calls);
  expect([...accepted].sort()).toEqual(
    calls
      .map(([id]) => id)
      .filter((id) => id.startsWith("ok"))
      .sort(),
  );
  // Each marked call was finally sent alone.
  const alone = receiver.requests.filter((r) => callsIn(r).length === 1).map((r) => callsIn(r)[0]!.messageId);
  expect(alone).toEqual(expect.arrayContaining(["big-3", "flaky-8"]));
  expect(await deliveryOf(server, destination.id, "big-3")).toMatchObject({ status: "failed", attempt_count: 1 });
  expect(await deliveryOf(server, destination.id, "flaky-8")).toMatchObject({ status: "retrying", attempt_count: 1 });
  const batches = await server.pool.query(
    "SELECT sum(calls)::int AS calls, sum(delivered)::int AS delivered FROM log_batches WHERE destination_id = $1",
    [destination.id],
  );
  expect(batches.rows[0]).toEqual({ calls: 12, delivered: 10 });

  const before = receiver.requests.length;
  flaky.failing = false;
  await retryUntilDelivered(server, destination.id, "flaky-8", ["flaky-8"]);
  // Retried alone, per call, and delivered.
  expect(receiver.requests.slice(before).map((r) => callsIn(r).map((c) => c.messageId))).toEqual([["flaky-8"]]);
  expect(await deliveryOf(server, destination.id, "flaky-8")).toMatchObject({ status: "delivered", attempt_count: 2 });
  expect(await deliveryOf(server, destination.id, "big-3")).toMatchObject({ status: "failed" });
});

const ofUserA = (ids: string[]) => ids.filter((id) => id.startsWith("a") || id.endsWith("-a1"));

test("per-user ordering: calls of the user read after the exception wait behind it, in order; other users' calls flow", async ({
  server,
}) => {
  const { destination, send } = await setup(server, Ordering.PER_USER);
  await send([
    ["flaky-a1", "a"],
    ["b1", "b"],
    ["b2", "b"],
  ]);
  // Later pages: the user's calls wait behind the exception as pending rows, the other user's go.
  await send([
    ["a2", "a"],
    ["b3", "b"],
    ["a3", "a"],
  ]);
  await send([
    ["a4", "a"],
    ["b4", "b"],
  ]);
  expect([...accepted].sort()).toEqual(["b1", "b2", "b3", "b4"]);
  expect(await deliveryOf(server, destination.id, "flaky-a1")).toMatchObject({ status: "retrying", ordering_key: "a" });
  for (const id of ["a2", "a3", "a4"]) expect(await deliveryOf(server, destination.id, id)).toMatchObject({ status: "pending" });

  flaky.failing = false;
  await retryUntilDelivered(server, destination.id, "flaky-a1", ["flaky-a1", "a2", "a3", "a4"]);
  expect(ofUserA(accepted)).toEqual(["flaky-a1", "a2", "a3", "a4"]);
});

// Fails: deliverPage (src/delivery/call-log/log-page.ts) knows only the users
// waiting behind an exception queued BEFORE the page was read
// (selectWaitingUsers); a user's later calls in the same page as its call
// that fails alone are sent in the page's batches and delivered before it.
test("per-user ordering: the user's later calls in the same page as its exception wait behind it", async ({ server }) => {
  const { destination, send } = await setup(server, Ordering.PER_USER);
  await send([
    ["flaky-a1", "a"],
    ["a2", "a"],
    ["b1", "b"],
    ["a3", "a"],
    ["b2", "b"],
  ]);
  expect([...accepted].sort()).toEqual(["b1", "b2"]);
  for (const id of ["a2", "a3"]) expect(await deliveryOf(server, destination.id, id)).toMatchObject({ status: "pending" });
  flaky.failing = false;
  await retryUntilDelivered(server, destination.id, "flaky-a1", ["flaky-a1", "a2", "a3"]);
  expect(ofUserA(accepted)).toEqual(["flaky-a1", "a2", "a3"]);
});
