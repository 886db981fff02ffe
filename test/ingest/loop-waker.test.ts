import { once } from "node:events";
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { deliveriesChannel } from "../../src/db/job-table/index.js";
import type { Pool } from "../../src/db/pool.js";
import { createLoopWaker } from "../../src/ingest/loop-waker.js";
import { createLogger } from "../../src/logger.js";
import { openTestDatabase, type TestDatabase } from "../helpers/database.js";

let database: TestDatabase;
let pool: Pool;
let listener: pg.Client;
const logger = createLogger("silent");

beforeAll(async () => {
  ({ database, pool } = await openTestDatabase());
  listener = new pg.Client({ connectionString: database.url });
  await listener.connect();
  await listener.query(`LISTEN ${deliveriesChannel}`);
});
afterAll(async () => {
  await listener?.end();
  await pool?.end();
  await database?.drop();
});

/** Notifications received on the channel from now on, counted. */
function countNotifications() {
  let count = 0;
  const onNotification = () => count++;
  listener.on("notification", onNotification);
  return {
    /** How many have arrived for what has committed: one round trip on the listener delivers them all. */
    async settled(): Promise<number> {
      await listener.query("SELECT 1");
      return count;
    },
    stop: () => listener.off("notification", onNotification),
  };
}

test("a burst of queued calls sends one NOTIFY now and one more when the interval has passed", async () => {
  // A long interval: the burst below surely falls inside it, however slow the machine.
  const waker = createLoopWaker({ pool, logger, intervalMs: 60_000 });
  const notifications = countNotifications();
  try {
    const first = once(listener, "notification");
    for (let i = 0; i < 100; i++) waker.queued();
    const [notification] = (await first) as [pg.Notification];
    expect(notification.channel).toBe(deliveriesChannel);
    expect(await notifications.settled()).toBe(1);
    // The burst's other 99 are owed one NOTIFY; closing sends it rather than waiting out the interval.
    await waker.close();
    expect(await notifications.settled()).toBe(2);
  } finally {
    notifications.stop();
  }
});

test("calls queued after the interval has passed are announced again, with nothing owed in between", async () => {
  const clock = new ManualClock();
  const waker = createLoopWaker({ pool, logger, intervalMs: 20, clock });
  const notifications = countNotifications();
  try {
    for (let round = 1; round <= 3; round++) {
      const next = once(listener, "notification");
      waker.queued();
      await next;
      expect(await notifications.settled()).toBe(round);
      clock.advance(20);
    }
    await waker.close();
    expect(await notifications.settled()).toBe(3);
  } finally {
    notifications.stop();
  }
});

test("a NOTIFY that fails is logged, not thrown: the loops fall back to polling", async () => {
  const warnings: unknown[] = [];
  const failing = { query: () => Promise.reject(new Error("connection lost")) } as unknown as Pool;
  const waker = createLoopWaker({ pool: failing, logger: { warn: (...args: unknown[]) => warnings.push(args) } });
  waker.queued();
  await waker.close();
  expect(warnings).toHaveLength(1);
});
