import { once } from "node:events";
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createThrottledNotify } from "../../src/background/throttled-notify.js";
import { ManualClock } from "../../src/clock.js";
import { deliveriesChannel } from "../../src/db/job-table/index.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { hooksChannel } from "../../src/db/queries/hook-notify.js";
import { createLogger } from "../../src/logger.js";
import { openTestDatabase, type TestDatabase } from "../helpers/database.js";

// The throttled NOTIFY both wake-ups use: ingest's of the delivery loops
// (no payload), the inbound URL's of the hook processors (a source id each).
let database: TestDatabase;
let pool: Pool;
let listener: pg.Client;
const logger = createLogger("silent");
const received: Array<{ channel: string; payload: string }> = [];

beforeAll(async () => {
  ({ database, pool } = await openTestDatabase());
  listener = new pg.Client({ connectionString: database.url });
  await listener.connect();
  await listener.query(`LISTEN ${deliveriesChannel}; LISTEN ${hooksChannel}`);
  listener.on("notification", (message) => received.push({ channel: message.channel, payload: message.payload ?? "" }));
});
afterAll(async () => {
  await listener?.end();
  await pool?.end();
  await database?.drop();
});

/** The notifications of `channel` received for what has committed (one round trip on the listener delivers them all), taken. */
async function settled(channel: string): Promise<string[]> {
  await listener.query("SELECT 1");
  const taken = received.filter((n) => n.channel === channel).map((n) => n.payload);
  received.splice(0, received.length, ...received.filter((n) => n.channel !== channel));
  return taken;
}

test("a burst of wake-ups sends one NOTIFY now and one more when the interval has passed (or at close)", async () => {
  // A long interval: the burst below surely falls inside it, however slow the machine.
  const notify = createThrottledNotify({ pool, channel: deliveriesChannel, logger, intervalMs: 60_000 });
  const first = once(listener, "notification");
  for (let i = 0; i < 100; i++) notify.add();
  await first;
  expect(await settled(deliveriesChannel)).toEqual([""]);
  // The burst's other 99 are owed one NOTIFY; closing sends it rather than waiting out the interval.
  await notify.close();
  expect(await settled(deliveriesChannel)).toEqual([""]);
});

test("wake-ups after the interval has passed (by the clock given) are announced again, with nothing owed in between", async () => {
  const clock = new ManualClock();
  const notify = createThrottledNotify({ pool, channel: deliveriesChannel, logger, intervalMs: 20, clock });
  for (let round = 1; round <= 3; round++) {
    const next = once(listener, "notification");
    notify.add();
    await next;
    expect(await settled(deliveriesChannel)).toEqual([""]);
    clock.advance(20);
  }
  await notify.close();
  expect(await settled(deliveriesChannel)).toEqual([]);
});

test("every payload is announced; payloads added together share a statement, each named once", async () => {
  // The first goes at once, the rest wait for close() to send them in one statement.
  const notify = createThrottledNotify({ pool, channel: hooksChannel, logger, intervalMs: 60_000 });
  notify.add("a");
  notify.add("b");
  notify.add("b");
  notify.add("c");
  await notify.close();
  expect((await settled(hooksChannel)).sort()).toEqual(["a", "b", "c"]);
});

test("a NOTIFY that fails is logged, not thrown: a wake-up is a hint, the listeners poll", async () => {
  // A database nobody listens on: port 1 refuses the connection.
  const unreachable = createPool({ connectionString: "postgres://postgres@127.0.0.1:1/none" });
  const warnings: unknown[] = [];
  const notify = createThrottledNotify({
    pool: unreachable,
    channel: hooksChannel,
    logger: { warn: (...args: unknown[]) => warnings.push(args) },
  });
  notify.add("x");
  await notify.close();
  await unreachable.end();
  expect(warnings).toHaveLength(1);
});
