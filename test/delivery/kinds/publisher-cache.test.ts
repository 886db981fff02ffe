import { expect, test } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import type { BrokerPublisher } from "../../../src/delivery/kinds/broker-publisher.js";
import { createPublisherCache } from "../../../src/delivery/kinds/publisher-cache.js";

/** A publisher that records what happens to it; its close waits until `release` is called, like one with publishes in flight. */
function recording(log: string[], name: string) {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const publisher: BrokerPublisher & { release(): void } = {
    publish: async () => ({ outcome: "success" }),
    publishRound: async (calls) => calls.map(() => ({ outcome: "success" })),
    async close() {
      log.push(`closing ${name}`);
      await released;
      log.push(`closed ${name}`);
    },
    release,
  };
  return publisher;
}

function setup() {
  const clock = new ManualClock(new Date("2026-11-28T10:00:00Z"));
  const log: string[] = [];
  const made: Array<ReturnType<typeof recording>> = [];
  const cache = createPublisherCache<{ url: string }>({
    clock,
    idleMs: 60_000,
    create(destinationId, settings) {
      log.push(`open ${destinationId} ${settings.url}`);
      const publisher = recording(log, `${destinationId} ${settings.url}`);
      made.push(publisher);
      return publisher;
    },
  });
  return { clock, log, made, cache };
}

test("one publisher per destination and revision; a newer revision replaces it and the old one closes", async () => {
  const { log, made, cache } = setup();
  const first = cache.get("d1", 1, () => ({ url: "a" }));
  expect(cache.get("d1", 1, () => ({ url: "ignored" }))).toBe(first);
  const second = cache.get("d1", 2, () => ({ url: "b" }));
  expect(second).not.toBe(first);
  // A delivery claimed before the update keeps the newer publisher.
  expect(cache.get("d1", 1, () => ({ url: "a" }))).toBe(second);
  expect(log).toEqual(["open d1 a", "closing d1 a", "open d1 b"]);
  for (const p of made) p.release();
  await cache.close();
  expect(log.slice(3).sort()).toEqual(["closed d1 a", "closed d1 b", "closing d1 b"]);
});

test("idle publishers close on sweep, used ones stay; drop closes one; close waits for every close", async () => {
  const { clock, log, made, cache } = setup();
  cache.get("idle", 1, () => ({ url: "x" }));
  cache.get("busy", 1, () => ({ url: "y" }));
  clock.advance(45_000);
  cache.get("busy", 1, () => ({ url: "y" }));
  clock.advance(15_000);
  made[0]!.release();
  await cache.sweep();
  expect(cache.size()).toBe(1);
  expect(log).toContain("closed idle x");
  expect(log).not.toContain("closing busy y");

  cache.get("other", 3, () => ({ url: "z" }));
  made[2]!.release();
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
