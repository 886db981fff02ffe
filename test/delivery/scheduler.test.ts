import { expect, test } from "vitest";
import { heldPerDestination } from "../../src/delivery/held-rounds.js";
import { createScheduler, type ClaimPlan } from "../../src/delivery/scheduler.js";

// The scheduler is pure: these tests drive it as the loop does (plan a
// claim, accept what came back, report what finished) with no database and
// no clock.

const config = { concurrency: 16, perDestinationConcurrency: 4, leaseMs: 60_000, timeoutMs: 10_000 };
// Three rounds of four fit in half a lease at the timeout; half the process is 8.
const perDestinationHeld = 8;

interface Item {
  destinationId: string;
  n: number;
}
const items = (destinationId: string, count: number, from = 0): Item[] =>
  Array.from({ length: count }, (_, i) => ({ destinationId, n: from + i }));

function scheduler(maxClaim = 500) {
  return createScheduler<Item>({ config, maxClaim });
}

test("the fixture's hold per destination is what heldPerDestination says", () => {
  expect(heldPerDestination(config)).toBe(perDestinationHeld);
});

test("a claim may take the process's free slots, at most maxClaim, and each destination's room", () => {
  const s = scheduler(10);
  expect(s.planClaim()).toEqual({ limit: 10, room: new Map(), perDestinationLimit: perDestinationHeld });
  const plan = s.planClaim()!;
  s.accept([...items("a", 3), ...items("b", 1)], plan);
  const next = s.planClaim()!;
  expect(next.limit).toBe(10);
  expect(next.room).toEqual(
    new Map([
      ["a", 5],
      ["b", 7],
    ]),
  );
  expect(s.held).toBe(4);
});

test("a destination sends at most its concurrency at once; the rest wait here, oldest first", () => {
  const s = scheduler();
  const { start, full } = s.accept(items("a", 6), s.planClaim()!);
  expect(start.map((i) => i.n)).toEqual([0, 1, 2, 3]);
  expect(full).toBe(false);
  expect(s.finished("a").next?.n).toBe(4);
  expect(s.finished("a").next?.n).toBe(5);
  expect(s.finished("a").next).toBeUndefined();
  expect(s.held).toBe(3);
});

test("when every slot is held there is no claim, until one finishes", () => {
  const s = scheduler();
  const plan = s.planClaim()!;
  const claimed = ["a", "b", "c", "d"].flatMap((d) => items(d, 4));
  expect(s.accept(claimed, plan)).toMatchObject({ full: true });
  expect(s.planClaim()).toBeUndefined();
  s.finished("a");
  expect(s.planClaim()?.limit).toBe(1);
});

test("a claim cut short by a destination's room claims ahead once a quarter of that room is free, not on every completion", () => {
  const s = scheduler();
  const plan: ClaimPlan = s.planClaim()!;
  // The destination got all it may hold here: more of it may be due.
  s.accept(items("a", perDestinationHeld), plan);
  // Four in flight, four waiting: each completion starts a waiting one.
  expect(s.finished("a")).toMatchObject({ claimAhead: false }); // room 1
  expect(s.finished("a")).toMatchObject({ claimAhead: true }); // room 2, a quarter of 8
});

test("a claim that was not cut short never claims ahead: the poll or a NOTIFY brings the rest", () => {
  const s = scheduler();
  s.accept(items("a", 3), s.planClaim()!);
  expect(s.finished("a").claimAhead).toBe(false);
  expect(s.finished("a").claimAhead).toBe(false);
});

test("a destination whose endpoint hangs holds at most half the process: the other half stays free for the rest", () => {
  const s = scheduler();
  const plan = s.planClaim()!;
  expect(plan.perDestinationLimit).toBe(config.concurrency / 2);
  s.accept(items("hanging", plan.perDestinationLimit), plan);
  const next = s.planClaim()!;
  expect(next.room.get("hanging")).toBe(0);
  expect(next.limit).toBe(config.concurrency / 2);
});

test("on stop, the waiting deliveries are taken out and no longer held; those in flight stay until they finish", () => {
  const s = scheduler();
  s.accept([...items("a", 6), ...items("b", 2)], s.planClaim()!);
  expect(s.drainWaiting().map((i) => `${i.destinationId}${i.n}`)).toEqual(["a4", "a5"]);
  expect(s.held).toBe(6);
  expect(s.drainWaiting()).toEqual([]);
  for (let i = 0; i < 4; i++) expect(s.finished("a").next).toBeUndefined();
  expect(s.planClaim()!.room.has("a")).toBe(false);
});

test("a finish for a destination with nothing in flight is a bug, and says so", () => {
  expect(() => scheduler().finished("nowhere")).toThrow(/no delivery of destination nowhere was in flight/);
});

test("a batching kind's destination takes its own limit: all of it in flight at once, and that much room", () => {
  // "w" is a warehouse destination that loads 6 at a time: no waiting list, room up to 6.
  const s = createScheduler<Item>({ config, maxClaim: 500, limitOf: (id) => (id === "w" ? 6 : undefined) });
  const { start } = s.accept([...items("w", 6), ...items("a", 6)], s.planClaim()!);
  expect(start.filter((i) => i.destinationId === "w")).toHaveLength(6);
  expect(start.filter((i) => i.destinationId === "a")).toHaveLength(config.perDestinationConcurrency);
  const room = s.planClaim()!.room;
  expect(room.get("w")).toBe(0);
  expect(room.get("a")).toBe(perDestinationHeld - 6);
  s.finished("w");
  expect(s.planClaim()!.room.get("w")).toBe(1);
});

test("a batching kind's destination is offered its whole limit in the next claim, even with nothing of it held here", () => {
  const s = createScheduler<Item>({ config, maxClaim: 500, limitOf: (id) => (id === "w" ? 6 : undefined) });
  // Unknown yet: the first claim offers it the webhook hold, as any destination.
  expect(s.planClaim()!.room.has("w")).toBe(false);
  s.accept(items("w", 6), s.planClaim()!);
  for (let i = 0; i < 6; i++) s.finished("w");
  // Nothing of it is held now; the next claim still offers its limit, not the webhook hold.
  expect(s.planClaim()!.room.get("w")).toBe(6);
  // A webhook destination with nothing held is left to the default.
  s.accept(items("a", 2), s.planClaim()!);
  s.finished("a");
  s.finished("a");
  expect(s.planClaim()!.room.has("a")).toBe(false);
});

test("a batching kind's destination holds its own limit outside the process's slots, and fills it while they are taken", () => {
  // "w" holds 40 (two warehouse batches of 20) in a process of 16 slots.
  const s = createScheduler<Item>({ config, maxClaim: 500, limitOf: (id) => (id === "w" ? 40 : undefined) });
  s.accept(items("w", 10), s.planClaim()!);
  // w's 10 take none of the 16 slots: the webhook destinations still get all of them.
  expect(s.planClaim()).toMatchObject({ limit: 16 + 30, perDestinationLimit: perDestinationHeld });
  s.accept([...items("a", 8), ...items("b", 8)], s.planClaim()!);
  // The process's slots are full; w may still take the rest of its limit, and only w.
  const full = s.planClaim()!;
  expect(full).toEqual({
    limit: 30,
    room: new Map([
      ["w", 30],
      ["a", 0],
      ["b", 0],
    ]),
    perDestinationLimit: 0,
  });
  const { start } = s.accept(items("w", 30, 10), full);
  expect(start).toHaveLength(30);
  expect(s.planClaim()).toBeUndefined();
  s.finished("w");
  expect(s.planClaim()).toMatchObject({
    limit: 1,
    room: new Map([
      ["w", 1],
      ["a", 0],
      ["b", 0],
    ]),
  });
});

test("beside a batching destination's room, the others take no more than the process's free slots", () => {
  const s = createScheduler<Item>({ config, maxClaim: 500, limitOf: (id) => (id === "w" ? 40 : undefined) });
  s.accept([...items("w", 1), ...items("a", 1), ...items("b", 11)], s.planClaim()!);
  // 12 of 16 slots held: 4 free, whatever w's room; a's own room (7) is cut to them.
  const plan = s.planClaim()!;
  expect(plan.limit).toBe(4 + 39);
  expect(plan.perDestinationLimit).toBe(4);
  expect(plan.room.get("a")).toBe(4);
  expect(plan.room.get("w")).toBe(39);
});
