import { expect, test } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { createTargetCache, type Target } from "../../../src/delivery/kinds/target-cache.js";

/** A target that records what happens to it; its close waits until `release` is called, like one with work in flight. */
function recording(log: string[], name: string) {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const target: Target & { release(): void; busy: boolean } = {
    busy: false,
    async close() {
      log.push(`closing ${name}`);
      await released;
      log.push(`closed ${name}`);
    },
    release,
  };
  return target;
}

function setup({ idleMs }: { idleMs?: number } = { idleMs: 60_000 }) {
  const clock = new ManualClock(new Date("2026-11-28T10:00:00Z"));
  const log: string[] = [];
  const made: Array<ReturnType<typeof recording>> = [];
  const cache = createTargetCache<{ url: string }, ReturnType<typeof recording>>({
    clock,
    idleMs,
    busy: (target) => target.busy,
    create(destinationId, settings, revision) {
      log.push(`open ${destinationId} ${settings.url} r${revision}`);
      const target = recording(log, `${destinationId} ${settings.url}`);
      made.push(target);
      return target;
    },
  });
  return { clock, log, made, cache };
}

test("one target per destination and revision; a newer revision replaces it and the old one closes", async () => {
  const { log, made, cache } = setup();
  const first = cache.get("d1", 1, () => ({ url: "a" }));
  expect(cache.get("d1", 1, () => ({ url: "ignored" }))).toBe(first);
  const second = cache.get("d1", 2, () => ({ url: "b" }));
  expect(second).not.toBe(first);
  // A delivery claimed before the update keeps the newer target.
  expect(cache.get("d1", 1, () => ({ url: "a" }))).toBe(second);
  expect(cache.revisionOf("d1")).toBe(2);
  expect(log).toEqual(["open d1 a r1", "closing d1 a", "open d1 b r2"]);
  for (const p of made) p.release();
  await cache.close();
  expect(log.slice(3).sort()).toEqual(["closed d1 a", "closed d1 b", "closing d1 b"]);
});

test("idle targets close on sweep, used and busy ones stay; drop closes one; close waits for every close", async () => {
  const { clock, log, made, cache } = setup();
  cache.get("idle", 1, () => ({ url: "x" }));
  cache.get("busy", 1, () => ({ url: "y" }));
  const working = cache.get("working", 1, () => ({ url: "w" }));
  working.busy = true;
  clock.advance(45_000);
  cache.get("busy", 1, () => ({ url: "y" }));
  clock.advance(15_000);
  made[0]!.release();
  await cache.sweep();
  expect(cache.destinations().sort()).toEqual(["busy", "working"]);
  expect(log).toContain("closed idle x");
  expect(log).not.toContain("closing busy y");
  expect(log).not.toContain("closing working w");

  // Its work done, a target idle that long goes on the next sweep.
  working.busy = false;
  made[2]!.release();
  await cache.sweep();
  expect(log).toContain("closed working w");

  cache.get("other", 3, () => ({ url: "z" }));
  made[3]!.release();
  await cache.drop("other");
  expect(log).toContain("closed other z");
  expect(cache.size()).toBe(1);

  let closed = false;
  const closingAll = cache.close().then(() => {
    closed = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  expect(closed).toBe(false);
  made[1]!.release();
  await closingAll;
  expect(log).toContain("closed busy y");
  expect(cache.size()).toBe(0);
});

test("reconcile closes the targets of deleted destinations and of those whose revision moved on, and keeps the rest", async () => {
  const { log, made, cache } = setup();
  cache.get("kept", 2, () => ({ url: "k" }));
  cache.get("deleted", 1, () => ({ url: "d" }));
  cache.get("moved", 1, () => ({ url: "m" }));
  for (const target of made) target.release();
  cache.reconcile(
    new Map([
      ["kept", { revision: 2 }],
      ["moved", { revision: 2 }],
    ]),
  );
  expect(cache.destinations()).toEqual(["kept"]);
  expect(log.filter((line) => line.startsWith("closing")).sort()).toEqual(["closing deleted d", "closing moved m"]);
  await cache.close();
});

test("without idleMs a sweep closes nothing", async () => {
  const { clock, cache } = setup({});
  cache.get("d1", 1, () => ({ url: "a" }));
  clock.advance(24 * 3_600_000);
  await cache.sweep();
  expect(cache.destinations()).toEqual(["d1"]);
});
