import { expect } from "vitest";
import type { DeliveryCompletion } from "../../src/db/job-table/index.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

// Hostile transforms beside plain destinations, through the real server and
// delivery loop: a transform that runs out its time on every call and one
// that fills its memory fail only their own deliveries, hold no delivery
// slot the others need while they wait for a sandbox, and the destinations
// beside them (with a transform or none) deliver everything meanwhile.

const timeoutMs = 200;

const test = testWith({
  server: {
    // Few slots: two destinations whose deliveries all wait for a sandbox could hold every one of them.
    config: {
      delivery: { concurrency: 32, perDestinationConcurrency: 16 },
      transform: { timeoutMs, memoryMb: 32, workers: 2 },
    },
  },
});

/** Every completion written, by destination. */
function recordCompletions(server: TestServer): Map<string, DeliveryCompletion[]> {
  const byDestination = new Map<string, DeliveryCompletion[]>();
  server.waypost.delivery!.events.on("completed", (completions) => {
    for (const c of completions) byDestination.set(c.destinationId, [...(byDestination.get(c.destinationId) ?? []), c]);
  });
  return byDestination;
}

/** Resolves once `count` deliveries of the destination have reached a final state. */
function finished(
  server: TestServer,
  byDestination: Map<string, DeliveryCompletion[]>,
  destinationId: string,
  count: number,
): Promise<DeliveryCompletion[]> {
  const done = () => (byDestination.get(destinationId) ?? []).filter((c) => c.status === "delivered" || c.status === "failed");
  return new Promise((resolve) => {
    const off = server.waypost.delivery!.events.on("completed", () => {
      if (done().length >= count) {
        off();
        resolve(done());
      }
    });
  });
}

test("hostile transforms fail only their own deliveries while plain and transforming destinations keep delivering", async ({
  server,
  receiver,
}) => {
  const byDestination = recordCompletions(server);
  const source = await server.createSource("isolation");
  const webhooks = [{ url: receiver.url }];
  const hog = await server.createDestination({
    name: "hog",
    sourceIds: [source.id],
    webhooks,
    transform: "function transform(e) { while (true) {} }",
  });
  const bomb = await server.createDestination({
    name: "bomb",
    sourceIds: [source.id],
    webhooks,
    transform: "function transform(e) { const a = []; while (true) a.push(new Uint8Array(1e7)); }",
  });
  const hostileCalls = 150;
  const calls = (n: number, prefix: string) =>
    Array.from({ length: n }, (_, i) => ({ type: { case: "track" as const, value: { userId: `u${i}`, event: `${prefix} ${i}` } } }));
  const firstHogFailure = finished(server, byDestination, hog.id, 1);
  expect((await server.tracking(source.writeKey).batch({ batch: calls(hostileCalls, "early") })).accepted).toBe(hostileCalls);
  await firstHogFailure;

  // Now destinations beside them, on a source of their own.
  const other = await server.createSource("beside");
  const plain = await server.createDestination({ name: "plain", sourceIds: [other.id], webhooks });
  const renaming = await server.createDestination({
    name: "renaming",
    sourceIds: [other.id],
    webhooks,
    transform: "function transform(e) { e.event = 'renamed ' + e.event; return e }",
  });
  const n = 100;
  const plainDone = finished(server, byDestination, plain.id, n);
  const renamingDone = finished(server, byDestination, renaming.id, n);
  expect((await server.tracking(other.writeKey).batch({ batch: calls(n, "beside") })).accepted).toBe(n);
  const [plainCompletions, renamingCompletions] = await Promise.all([plainDone, renamingDone]);
  const hostileFinished = [hog.id, bomb.id].map((id) => (byDestination.get(id) ?? []).filter((c) => c.status === "failed").length);

  expect(plainCompletions.map((c) => c.status)).toEqual(Array(n).fill("delivered"));
  expect(renamingCompletions.map((c) => c.status)).toEqual(Array(n).fill("delivered"));
  const renamed = receiver.requests.map((r) => JSON.parse(r.body).event as string).filter((e) => e.startsWith("renamed beside"));
  expect(new Set(renamed).size).toBe(n);
  // All of it while the hostile backlogs (300 calls, over 30 s of sandbox time) were mostly
  // still there: their deliveries were handed back rather than holding the slots the others
  // needed while they waited for a sandbox. (Holding them, the bomb's whole backlog and half
  // the hog's were through first.)
  expect(hostileFinished[0]! + hostileFinished[1]!).toBeLessThan(hostileCalls);

  // The hostile ones failed permanently with their own reason; what they sent: nothing.
  for (const c of byDestination.get(hog.id)!.filter((c) => c.status === "failed")) {
    // Its CPU time, or (on a machine too busy to give it that within the backstop) its wall time.
    expect(c.attempts[0]!.error).toMatch(new RegExp(`^transform: ran longer than ${timeoutMs} ms( of CPU time| \\(\\d+ ms of wall time)`));
  }
  for (const c of byDestination.get(bomb.id)!.filter((c) => c.status === "failed")) {
    expect(c.attempts[0]!.error).toBe("transform: ran out of memory");
  }
  expect(receiver.requests.some((r) => /"early \d+"/.test(r.body))).toBe(false);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  expect(metrics).toMatch(new RegExp(`waypost_transform_sandbox_failures_total\\{destination_id="${hog.id}",reason="timeout"\\} [1-9]`));
  expect(metrics).toMatch(
    new RegExp(`waypost_transform_sandbox_failures_total\\{destination_id="${bomb.id}",reason="out_of_memory"\\} [1-9]`),
  );
  expect(metrics).toMatch(new RegExp(`waypost_transform_deferred_total\\{destination_id="${hog.id}"\\} [1-9]`));
  expect(metrics).not.toContain(`destination_id="${renaming.id}",reason=`);
}, 180_000);
