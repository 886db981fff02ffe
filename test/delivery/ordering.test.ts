import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { DeletionService } from "../../gen/waypost/v1/deletion_pb.js";
import { Ordering } from "../../gen/waypost/v1/destination_pb.js";
import { ManualClock } from "../../src/clock.js";
import { audienceClient, createAudience, withAdmin } from "../audiences/support.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";

// One server with a manual clock: retry waits and the 4-hour deadline pass
// at once. Its delivery loop claims when poked.
const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
const receivers: Receiver[] = [];
// The destination of the running test: event names repeat between tests.
let current = "";

const test = testWith({ server: { clock } });
test.afterEach(async ({ server }) => {
  await server.waypost.delivery!.settle();
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

type Who = { userId: string } | { anonymousId: string };

/** A per-user destination whose receiver fails the events listed in `failing` (503) and accepts the rest. */
async function setup(server: TestServer, failing: Set<string>, ordering = Ordering.PER_USER) {
  const receiver = await startReceiver({
    respond: (request) => ({ status: failing.has(JSON.parse(request.body).event) ? 503 : 200 }),
  });
  receivers.push(receiver);
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "ordered",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    ordering,
  });
  current = destination.id;
  const client = server.tracking(source.writeKey);
  const send = (calls: Array<[Who, string]>) =>
    client.batch({ batch: calls.map(([who, event]) => ({ type: { case: "track" as const, value: { ...who, event } } })) });
  const events = () => receiver.requests.map((r) => JSON.parse(r.body).event as string);
  return { receiver, destination, send, events };
}

async function deliveryOf(server: TestServer, event: string) {
  const result = await server.pool.query(
    `SELECT d.id, d.status, d.run_at, d.attempt_count, d.ordering_key FROM deliveries d
       JOIN messages m ON m.id = d.message_pk WHERE d.destination_id = $1 AND m.payload::jsonb ->> 'event' = $2`,
    [current, event],
  );
  return result.rows[0];
}

/** Moves the clock to the delivery's next attempt and lets the loop take it. */
async function runNextAttempt(server: TestServer, event: string, alsoWaitFor = 0) {
  const row = await deliveryOf(server, event);
  clock.set(new Date(Math.max(row.run_at.getTime(), clock.now().getTime())));
  const done = server.waitForDeliveries(1 + alsoWaitFor, ["delivered", "failed", "expired", "retrying"]);
  server.waypost.delivery!.poke();
  return done;
}

const a = { userId: "a" };
const b = { userId: "b" };
const anonymous = { anonymousId: "anon-x" };

test("a retrying delivery holds back only its own user's later ones", async ({ server }) => {
  const failing = new Set(["A1"]);
  const { send, events } = await setup(server, failing);
  const first = server.waitForDeliveries(4, ["delivered", "retrying"]);
  await send([
    [a, "A1"],
    [a, "A2"],
    [b, "B1"],
    [b, "B2"],
    [anonymous, "X1"],
  ]);
  const statuses = new Map((await first).map((c) => [c.id, c.status]));
  expect((await deliveryOf(server, "A1")).status).toBe("retrying");
  expect([...statuses.values()].sort()).toEqual(["delivered", "delivered", "delivered", "retrying"]);
  // Other users, and the anonymous one, went through; b in order.
  expect(events().filter((e) => e !== "A1")).toEqual(expect.arrayContaining(["B1", "B2", "X1"]));
  expect(events().indexOf("B1")).toBeLessThan(events().indexOf("B2"));

  // A2 is due but waits: a claim while A1's retry is still ahead takes nothing.
  clock.advance(2_000);
  server.waypost.delivery!.poke();
  await server.waypost.delivery!.settle();
  const held = await deliveryOf(server, "A2");
  expect(held.status).toBe("pending");
  expect(held.run_at.getTime()).toBeLessThanOrEqual(clock.now().getTime());
  expect(events()).not.toContain("A2");

  // The receiver recovers: A1 goes at its retry, then A2 right after.
  failing.clear();
  const done = await runNextAttempt(server, "A1", 1);
  expect(done.map((c) => c.status)).toEqual(["delivered", "delivered"]);
  expect(events().filter((e) => e.startsWith("A"))).toEqual(["A1", "A1", "A2"]);
});

test("an earlier delivery that expires releases the next", async ({ server }) => {
  const { send, events } = await setup(server, new Set(["A1"]));
  const first = server.waitForDeliveries(1, ["retrying"]);
  // A1 is never delivered: the first delivery is A2's.
  const next = server.waitForDeliveries(1, ["delivered"]);
  await send([
    [a, "A1"],
    [a, "A2"],
  ]);
  await first;
  let attempts = 1;
  for (;;) {
    const [result] = await runNextAttempt(server, "A1");
    attempts++;
    expect(events()).not.toContain("A2");
    if (result!.status === "expired") break;
    expect(result!.status).toBe("retrying");
  }
  expect(attempts).toBeGreaterThan(5);
  expect((await next)[0]!.id).toBe((await deliveryOf(server, "A2")).id);
  expect(events().at(-1)).toBe("A2");
});

test("turning ordering on or off applies to the next claim", async ({ server }) => {
  const { destination, send, events } = await setup(server, new Set(["A1"]), Ordering.NONE);
  const first = server.waitForDeliveries(2, ["delivered", "retrying"]);
  await send([
    [a, "A1"],
    [a, "A2"],
  ]);
  await first;
  // Unordered: A2 did not wait for the failing A1.
  expect(events()).toContain("A2");

  await server.destinations.updateDestination({
    destination: { id: destination.id, ordering: Ordering.PER_USER },
    updateMask: { paths: ["ordering"] },
  });
  await send([[a, "A3"]]);
  server.waypost.delivery!.poke();
  await server.waypost.delivery!.settle();
  expect((await deliveryOf(server, "A3")).status).toBe("pending");
  expect(events()).not.toContain("A3");

  const released = server.waitForDeliveries(1, ["delivered"]);
  const { destination: updated } = await server.destinations.updateDestination({
    destination: { id: destination.id, ordering: Ordering.NONE },
    updateMask: { paths: ["ordering"] },
  });
  expect(updated?.ordering).toBe(Ordering.NONE);
  server.waypost.delivery!.poke();
  expect((await released)[0]!.id).toBe((await deliveryOf(server, "A3")).id);
});

test("the setting is validated and returned; audience identifies and delete notifications are keyed by their user", async ({ server }) => {
  const source = await server.createSource();
  const receiver = await startReceiver({ respond: () => ({ status: 503 }) });
  receivers.push(receiver);
  const created = await server.createDestination({
    name: "keys",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    ordering: Ordering.PER_USER,
  });
  expect(created.ordering).toBe(Ordering.PER_USER);
  expect((await server.destinations.getDestination({ id: created.id })).destination?.ordering).toBe(Ordering.PER_USER);
  const plain = await server.createDestination({ name: "plain", sourceIds: [], webhooks: [{ url: receiver.url }] });
  expect(plain.ordering).toBe(Ordering.NONE);
  await expect(
    server.destinations.updateDestination({
      destination: { id: created.id, ordering: 7 as Ordering },
      updateMask: { paths: ["ordering"] },
    }),
  ).rejects.toThrow(/destination\.ordering: unknown ordering 7/);

  const audience = await createAudience(server, source.id, "VIP");
  await audienceClient(server).syncAudience({ audienceId: audience.id, userIds: ["member-1"] });
  const deletion = withAdmin(createClient(DeletionService, server.transport), server.adminToken);
  await deletion.createDeletionRequest({ userId: "gone-1", sourceIds: [source.id] });
  const keys = await server.pool.query(
    `SELECT m.type, d.ordering_key FROM deliveries d JOIN messages m ON m.id = d.message_pk
      WHERE d.destination_id = $1 ORDER BY d.id`,
    [created.id],
  );
  expect(keys.rows).toEqual([
    { type: "identify", ordering_key: "member-1" },
    { type: "delete", ordering_key: "gone-1" },
  ]);
});
