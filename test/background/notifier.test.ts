import { afterAll, beforeAll, expect, test } from "vitest";
import { createNotifier, type Notifier } from "../../src/background/notifier.js";
import type { Pool } from "../../src/db/pool.js";
import { createLogger } from "../../src/logger.js";
import { openTestDatabase, type TestDatabase } from "../helpers/database.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";

// The process's one LISTEN connection, against the real database: topics
// share it, a killed or cut connection is made again after a growing
// back-off, and subscribers are told when it is back.
let database: TestDatabase;
let pool: Pool;
const logger = createLogger("silent");
const notifiers: Notifier[] = [];

beforeAll(async () => {
  ({ database, pool } = await openTestDatabase());
});
afterAll(async () => {
  await Promise.all(notifiers.map((n) => n.close()));
  await pool?.end();
  await database?.drop();
});

/** Reconnects that run only when the test says, with the waits they were scheduled after. */
function heldReconnects() {
  const waits: number[] = [];
  const queued: Array<() => void> = [];
  let onScheduled: (() => void) | undefined;
  return {
    waits,
    schedule(reconnect: () => void, ms: number) {
      waits.push(ms);
      queued.push(reconnect);
      onScheduled?.();
      return () => {
        const index = queued.indexOf(reconnect);
        if (index >= 0) queued.splice(index, 1);
      };
    },
    /** The wait of the reconnect scheduled next (or already waiting). */
    async next(): Promise<number> {
      if (queued.length === 0) await new Promise<void>((resolve) => (onScheduled = resolve));
      onScheduled = undefined;
      return waits.at(-1)!;
    },
    run: () => queued.shift()!(),
    get waiting() {
      return queued.length;
    },
  };
}

/** Payloads a subscription received, and a wait for the next one. */
function inbox() {
  const payloads: string[] = [];
  let waiter: (() => void) | undefined;
  return {
    payloads,
    receive(payload: string) {
      payloads.push(payload);
      waiter?.();
    },
    async next(count: number): Promise<string[]> {
      while (payloads.length < count) await new Promise<void>((resolve) => (waiter = resolve));
      return payloads;
    },
  };
}

const listenConnections = async (applicationName: string) =>
  (
    await pool.query<{ pid: number; query: string }>(
      "SELECT pid, query FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1",
      [applicationName],
    )
  ).rows;

test("every topic's notifications reach its subscribers over one connection; an unsubscribed topic is listened on no more", async () => {
  const notifier = createNotifier({ connectionString: database.url, logger, applicationName: "notifier-topics" });
  notifiers.push(notifier);
  const [first, second, other] = [inbox(), inbox(), inbox()];
  const offFirst = notifier.subscribe("topic_a", first.receive);
  const offSecond = notifier.subscribe("topic_a", second.receive);
  notifier.subscribe("topic_b", other.receive);
  await notifier.settled();
  await pool.query("SELECT pg_notify('topic_a', 'x'), pg_notify('topic_b', 'y')");
  expect(await first.next(1)).toEqual(["x"]);
  expect(await second.next(1)).toEqual(["x"]);
  expect(await other.next(1)).toEqual(["y"]);
  expect(await listenConnections("notifier-topics")).toHaveLength(1);

  offFirst();
  offSecond();
  await notifier.settled();
  // One session's NOTIFYs arrive in order: once topic_b's has, topic_a's would have.
  await pool.query("SELECT pg_notify('topic_a', 'gone')");
  await pool.query("SELECT pg_notify('topic_b', 'z')");
  expect(await other.next(2)).toEqual(["y", "z"]);
  expect(first.payloads).toEqual(["x"]);
  expect((await listenConnections("notifier-topics"))[0]!.query).toBe('UNLISTEN "topic_a"');
});

test("a connection killed by the server is made again a second later; subscribers are told, and hear NOTIFYs again", async () => {
  const reconnects = heldReconnects();
  const notifier = createNotifier({
    connectionString: database.url,
    logger,
    applicationName: "notifier-killed",
    random: () => 0.5,
    schedule: reconnects.schedule,
  });
  notifiers.push(notifier);
  let readies = 0;
  notifier.onReady(() => readies++);
  const messages = inbox();
  notifier.subscribe("topic_k", messages.receive);
  await notifier.settled();
  expect(readies).toBe(1);

  const [listening] = await listenConnections("notifier-killed");
  await pool.query("SELECT pg_terminate_backend($1)", [listening!.pid]);
  // One second, shortened by the jitter (half of a quarter here).
  expect(await reconnects.next()).toBe(875);
  reconnects.run();
  await notifier.settled();
  expect(readies).toBe(2);
  const [again] = await listenConnections("notifier-killed");
  expect(again!.pid).not.toBe(listening!.pid);
  expect(again!.query).toBe('LISTEN "topic_k"');
  await pool.query("SELECT pg_notify('topic_k', 'back')");
  expect(await messages.next(1)).toEqual(["back"]);
});

test("while the database cannot be reached the waits double up to 30 s; after a connection they start over at 1 s", async () => {
  const url = new URL(database.url);
  const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  try {
    proxy.down();
    url.port = String(proxy.port);
    const reconnects = heldReconnects();
    const notifier = createNotifier({ connectionString: url.toString(), logger, random: () => 0, schedule: reconnects.schedule });
    notifiers.push(notifier);
    let readies = 0;
    notifier.onReady(() => readies++);
    notifier.subscribe("topic_c", () => {});
    await notifier.settled();
    for (let attempt = 0; attempt < 6; attempt++) {
      reconnects.run();
      await notifier.settled();
    }
    expect(reconnects.waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(readies).toBe(0);

    proxy.up();
    reconnects.run();
    await notifier.settled();
    expect(readies).toBe(1);
    proxy.down();
    expect(await reconnects.next()).toBe(1_000);

    // Closed, it never connects again: the reconnect waiting is cancelled.
    await notifier.close();
    expect(reconnects.waiting).toBe(0);
  } finally {
    await proxy.close();
  }
});
