import { afterEach, expect } from "vitest";
import { Ordering } from "../../gen/waypost/v1/destination_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { attemptsBy, createWorkerPool, startTimedReceiver, type TimedReceiver } from "./flow-support.js";

// An API-only server takes the calls; two separate worker processes deliver.
const receivers: TimedReceiver[] = [];

const test = testWith({ server: { config: { role: "api" } } });
let workers: ReturnType<typeof createWorkerPool>;
test.beforeAll(({ server }) => {
  workers = createWorkerPool(() => server.database.url);
});
afterEach(async () => {
  await workers.stopAll();
  await Promise.all(receivers.splice(0).map((r) => r.receiver.close()));
});

/**
 * A receiver that answers after a random few milliseconds (so requests
 * overlap and could overtake each other) and records, per user, the most
 * requests it had open at once.
 */
async function userTrackingReceiver() {
  const open = new Map<string, number>();
  const mostOpen = new Map<string, number>();
  const timed = await startTimedReceiver((body) => {
    const key = String(body.userId ?? body.anonymousId);
    const now = (open.get(key) ?? 0) + 1;
    open.set(key, now);
    mostOpen.set(key, Math.max(mostOpen.get(key) ?? 0, now));
    const answered = new Promise<void>((resolve) => setTimeout(resolve, Math.random() * 15));
    return {
      status: 200,
      after: answered.then(() => open.set(key, open.get(key)! - 1)),
    };
  });
  receivers.push(timed);
  return { ...timed, mostOpen };
}

test("two worker processes deliver every user's calls in acceptance order, one at a time", { timeout: 90_000 }, async ({ server: api }) => {
  const ordered = await userTrackingReceiver();
  const unordered = await userTrackingReceiver();
  const source = await api.createSource();
  await api.createDestination({
    name: "ordered",
    sourceIds: [source.id],
    webhooks: [{ url: ordered.receiver.url }],
    ordering: Ordering.PER_USER,
  });
  // The same calls to an unordered destination: shows the receiver would see disorder.
  await api.createDestination({
    name: "unordered",
    sourceIds: [source.id],
    webhooks: [{ url: unordered.receiver.url }],
    ordering: Ordering.NONE,
  });
  const client = api.tracking(source.writeKey);
  // Both workers are up before the calls come, so both take part.
  const [a, b] = await Promise.all([workers.start(), workers.start()]);
  // 40 users, 15 calls each, interleaved; a quarter of the users are
  // anonymous (ordered by anonymousId). Sent as sequential batches (one of
  // 300, then 50 at a time, while the workers deliver), so the acceptance
  // order is the order of `seq`.
  const users = Array.from({ length: 40 }, (_, i) => (i % 4 === 0 ? { anonymousId: `anon-${i}` } : { userId: `user-${i}` }));
  const calls = Array.from({ length: 600 }, (_, seq) => ({ seq, who: users[(seq * 7 + Math.floor(seq / 40)) % 40]! }));
  for (let i = 0; i < calls.length; i += i === 0 ? 300 : 50) {
    await client.batch({
      batch: calls.slice(i, i + (i === 0 ? 300 : 50)).map(({ seq, who }) => ({
        type: { case: "track" as const, value: { ...who, event: "E", properties: { seq } } },
      })),
    });
  }
  await Promise.all([ordered.receiver.waitForRequests(600), unordered.receiver.waitForRequests(600)]);

  const sequences = (arrivals: TimedReceiver["arrivals"]) => {
    const byUser = new Map<string, number[]>();
    for (const { body } of arrivals) {
      const key = String(body.userId ?? body.anonymousId);
      const list = byUser.get(key) ?? [];
      list.push((body.properties as { seq: number }).seq);
      byUser.set(key, list);
    }
    return byUser;
  };
  const expected = new Map<string, number[]>();
  for (const { seq, who } of calls) {
    const key = who.userId ?? who.anonymousId!;
    expected.set(key, [...(expected.get(key) ?? []), seq]);
  }
  expect(sequences(ordered.arrivals)).toEqual(expected);
  expect(Math.max(...ordered.mostOpen.values())).toBe(1);
  // Without ordering, users' calls overlapped at the same receiver.
  expect(Math.max(...unordered.mostOpen.values())).toBeGreaterThan(1);
  // Both processes delivered.
  expect(await attemptsBy(a)).toBeGreaterThan(0);
  expect(await attemptsBy(b)).toBeGreaterThan(0);
});
