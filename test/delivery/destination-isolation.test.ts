import { afterAll, expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { completionsOf } from "../helpers/server.js";

// Destination isolation through the scheduler (the loop's slots and the claim's room): a
// destination whose endpoint never answers holds only its own slots, and
// the others keep their throughput beside it.

const perDestination = 3;
let healthy: Receiver;

const test = testWith({
  server: {
    // The hanging endpoint's requests outlast the test by far (however slow
    // the machine); closing the receiver at the end ends them.
    config: { delivery: { concurrency: 16, perDestinationConcurrency: perDestination, timeoutMs: 600_000 } },
  },
  receiver: { respond: () => ({ hang: true }) },
});
test.beforeAll(async () => {
  healthy = await startReceiver();
});
afterAll(async () => {
  await healthy?.close();
});

test("a hanging destination holds only its own slots; a healthy one beside it delivers everything meanwhile", async ({
  server,
  receiver: hanging,
}) => {
  const slowSource = await server.createSource("slow");
  const fastSource = await server.createSource("fast");
  await server.createDestination({ name: "hanging", sourceIds: [slowSource.id], webhooks: [{ url: hanging.url }] });
  const fast = await server.createDestination({ name: "healthy", sourceIds: [fastSource.id], webhooks: [{ url: healthy.url }] });

  // The hanging destination's work comes first, more of it than the whole process has slots for.
  const slowCalls = Array.from({ length: 40 }, (_, i) => ({
    type: { case: "track" as const, value: { userId: "u", event: `slow ${i}` } },
  }));
  expect((await server.tracking(slowSource.writeKey).batch({ batch: slowCalls })).accepted).toBe(40);
  await hanging.waitForRequests(perDestination);

  const n = 60;
  const done = completionsOf(server, fast.id, n);
  const fastCalls = Array.from({ length: n }, (_, i) => ({ type: { case: "track" as const, value: { userId: "u", event: `fast ${i}` } } }));
  expect((await server.tracking(fastSource.writeKey).batch({ batch: fastCalls })).accepted).toBe(n);
  // Starved, they would wait for the hanging requests' timeout, long after the test's own.
  const completions = await done;

  expect(completions.map((c) => c.status)).toEqual(Array(n).fill("delivered"));
  expect(new Set(healthy.requests.map((r) => JSON.parse(r.body).event)).size).toBe(n);
  // All of it while the hanging endpoint's first requests are still open:
  // the healthy one never waited for them.
  expect(hanging.open).toBe(perDestination);
  // The hanging one never had more than its cap in flight, and no request
  // beyond its first ones was started: its other deliveries wait their turn.
  expect(hanging.maxOpen).toBe(perDestination);
  expect(hanging.requests).toHaveLength(perDestination);
}, 60_000);
