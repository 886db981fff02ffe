import { afterEach, expect, test } from "vitest";
import { claimDeliveries } from "../../src/db/job-table/index.js";
import { eventually } from "../helpers/process.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { ManualClock, startTestServer, type TestServer } from "../helpers/server.js";

// A one-second lease, one request at a time per destination: a process holds
// two deliveries of a destination (one in flight, one claimed ahead for the
// next round). The endpoint timeout is long so a slow machine never turns
// the held request into a retry.
const leaseMs = 1_000;
const delivery = { leaseMs, perDestinationConcurrency: 1, concurrency: 4, timeoutMs: 30_000 };

const servers: TestServer[] = [];
const receivers: Receiver[] = [];
afterEach(async () => {
  // The second server shares the first one's database: stop it first.
  for (const server of servers.splice(0).reverse()) await server.stop();
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

/** A server holding two deliveries: the first request is held open by the receiver until `answer()`. */
async function holdingTwo() {
  const clock = new ManualClock(new Date("2026-11-01T00:00:00Z"));
  let answer: () => void = () => {};
  const answered = new Promise<void>((resolve) => (answer = resolve));
  const receiver = await startReceiver({ respond: (_, index) => (index === 0 ? { status: 200, after: answered } : { status: 200 }) });
  receivers.push(receiver);
  const first = await startTestServer({ clock, config: { delivery } });
  servers.push(first);
  const source = await first.createSource();
  const destination = await first.createDestination({ name: "slow", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  await first.tracking(source.writeKey).batch({
    batch: ["call-1", "call-2"].map((messageId) => ({ type: { case: "track" as const, value: { userId: "u", event: "E", messageId } } })),
  });
  await receiver.waitForRequests(1);
  const leases = await first.pool.query<{ leased_until: Date }>("SELECT leased_until FROM deliveries");
  expect(leases.rows.map((r) => r.leased_until)).toEqual([0, 1].map(() => new Date(clock.now().getTime() + leaseMs)));
  return { clock, answer, receiver, first, destinationId: destination.id };
}

const postedIds = (receiver: Receiver) => receiver.requests.map((r) => JSON.parse(r.body).messageId as string).sort();

test("leases held by a busy process are extended: a second process past the first lease takes nothing, and every call is POSTed once", async () => {
  const { clock, answer, receiver, first } = await holdingTwo();
  const leasedUntil = async () =>
    (await first.pool.query<{ until: Date }>("SELECT max(leased_until) AS until FROM deliveries")).rows[0]!.until;
  // Two thirds of a lease on, the heartbeat moves both leases' end a lease past now.
  clock.advance(700);
  await eventually(async () => (await leasedUntil()).getTime() === clock.now().getTime() + leaseMs);
  // Past the end of the claim's lease: without the heartbeat both deliveries would be due again.
  clock.advance(700);
  const second = await startTestServer({ clock, database: first.database, config: { delivery } });
  servers.push(second);
  const claimed = new Promise<number>((resolve) => second.waypost.delivery!.events.once("claimed", (c) => resolve(c.count)));
  second.waypost.delivery!.poke();
  expect(await claimed).toBe(0);

  answer();
  await first.waitForDeliveries(2);
  await first.waypost.delivery!.settle();
  await second.waypost.delivery!.settle();
  expect(postedIds(receiver)).toEqual(["call-1", "call-2"]);
  const rows = await first.pool.query("SELECT status, attempt_count FROM deliveries");
  expect(rows.rows).toEqual([0, 1].map(() => ({ status: "delivered", attempt_count: 1 })));
});

test("a delivery claimed ahead whose lease another process took is dropped unsent", async () => {
  const { clock, answer, receiver, first, destinationId } = await holdingTwo();
  // The first process stalls past its lease, and another process claims
  // what is due then (it takes both: the held request's too, which was
  // already sent and cannot be called back).
  clock.advance(leaseMs + 500);
  const farAhead = new Date(clock.now().getTime() + 60 * 60_000);
  const taken = await claimDeliveries(first.pool, {
    now: farAhead,
    limit: 10,
    perDestinationLimit: 10,
    room: new Map(),
    leaseMs,
    owner: "other",
  });
  expect(taken.deliveries).toHaveLength(2);
  const events = first.waypost.delivery!.events;
  const lost = new Promise<string[]>((resolve) => {
    const ids: string[] = [];
    events.on("lost", (more) => {
      ids.push(...more);
      if (ids.length > 0) resolve(ids);
    });
  });
  answer();
  // The held request's result is stale; the delivery waiting behind it is never sent by this process.
  const stale = new Promise<void>((resolve) => events.once("stale", () => resolve()));
  const outcome = await Promise.race([lost.then(() => "dropped"), receiver.waitForRequests(2).then(() => "sent twice")]);
  expect(outcome).toBe("dropped");
  await stale;
  await first.waypost.delivery!.settle();
  expect(receiver.requests).toHaveLength(1);
  const waiting = await first.pool.query<{ id: string }>(
    "SELECT d.id FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE m.message_id <> $1",
    [postedIds(receiver)[0]],
  );
  expect(await lost).toContain(waiting.rows[0]!.id);
  const rows = await first.pool.query("SELECT lease_owner, attempt_count FROM deliveries WHERE destination_id = $1", [destinationId]);
  expect(rows.rows).toEqual([0, 1].map(() => ({ lease_owner: "other", attempt_count: 0 })));
});

test("a process stalled past its own leases does not claim them back: every call is POSTed once", async () => {
  // A lease so long that no heartbeat runs during the test: the clock jump
  // below is a stall (a busy machine, a slow database) that outlasted it.
  const longLease = 600_000;
  const clock = new ManualClock(new Date("2026-11-01T00:00:00Z"));
  let answer: () => void = () => {};
  const answered = new Promise<void>((resolve) => (answer = resolve));
  const receiver = await startReceiver({ respond: () => ({ status: 200, after: answered }) });
  receivers.push(receiver);
  // Two in flight at once, and room for six more (held rounds): the next claim may take from this destination.
  const server = await startTestServer({
    clock,
    config: { delivery: { ...delivery, leaseMs: longLease, perDestinationConcurrency: 2, concurrency: 16 } },
  });
  servers.push(server);
  const source = await server.createSource();
  await server.createDestination({ name: "slow", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  await server.tracking(source.writeKey).batch({
    batch: ["call-1", "call-2"].map((messageId) => ({ type: { case: "track" as const, value: { userId: "u", event: "E", messageId } } })),
  });
  await receiver.waitForRequests(2);

  // Both requests are still in flight when their leases run out here.
  clock.advance(longLease + 1_000);
  const after = performance.now();
  const loop = server.waypost.delivery!;
  const claimed = new Promise<number>((resolve) => {
    const off = loop.events.on("claimed", ({ count, startedAt }) => {
      if (startedAt < after) return;
      off();
      resolve(count);
    });
  });
  loop.poke();
  expect(await claimed).toBe(0);

  answer();
  await server.waitForDeliveries(2);
  await loop.settle();
  expect(postedIds(receiver)).toEqual(["call-1", "call-2"]);
  const rows = await server.pool.query("SELECT status, attempt_count FROM deliveries");
  expect(rows.rows).toEqual([0, 1].map(() => ({ status: "delivered", attempt_count: 1 })));
});
