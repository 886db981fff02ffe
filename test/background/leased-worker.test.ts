import { afterAll, beforeAll, beforeEach, expect, test } from "vitest";
import { createLeasedWorker, type LeasedWorker, type LeaseSource } from "../../src/background/leased-worker.js";
import { createNotifier } from "../../src/background/notifier.js";
import { ManualClock } from "../../src/clock.js";
import type { Pool } from "../../src/db/pool.js";
import { createLogger } from "../../src/logger.js";
import { openTestDatabase, type TestDatabase } from "../helpers/database.js";

// The leased worker over a table of its own, on the real database: items
// claimed under a lease, worked a page at a time (each page a write fenced
// by the lease's token), extended by the heartbeat, released at the end.
let database: TestDatabase;
let pool: Pool;
const logger = createLogger("silent");
const start = new Date("2026-12-01T10:00:00Z");
const workers: LeasedWorker[] = [];

beforeAll(async () => {
  ({ database, pool } = await openTestDatabase());
  await pool.query(`CREATE TABLE leased_items (
    key text PRIMARY KEY, pages int NOT NULL DEFAULT 0, done boolean NOT NULL DEFAULT false,
    lease_id text, lease_until timestamptz, worked_by text[] NOT NULL DEFAULT '{}')`);
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await pool?.end();
  await database?.drop();
});
beforeEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
  await pool.query("DELETE FROM leased_items");
});

/** The items' lease as a LeaseSource; `onExtended` hears each heartbeat's answer once the worker has. */
function itemLeases(leaseMs: number, onExtended?: (held: boolean) => void): LeaseSource<string> {
  return {
    leaseMs,
    async claim(token, now, prefer) {
      const result = await pool.query<{ key: string }>(
        `UPDATE leased_items SET lease_id = $1, lease_until = $2::timestamptz + $3::int * interval '1 millisecond'
          WHERE key = (SELECT key FROM leased_items WHERE NOT done AND (lease_until IS NULL OR lease_until <= $2)
                        ORDER BY key = $4 DESC NULLS LAST, key LIMIT 1 FOR UPDATE SKIP LOCKED)
          RETURNING key`,
        [token, now, leaseMs, prefer ?? null],
      );
      return result.rows[0]?.key;
    },
    keyOf: (key) => key,
    extend(key, token, now) {
      const extended = pool
        .query(
          "UPDATE leased_items SET lease_until = $3::timestamptz + $4::int * interval '1 millisecond' WHERE key = $1 AND lease_id = $2",
          [key, token, now, leaseMs],
        )
        .then((result) => (result.rowCount ?? 0) > 0);
      // After the worker's own handler of the answer has run.
      extended.then((held) => setImmediate(() => onExtended?.(held))).catch(() => {});
      return extended;
    },
    async release(key, token) {
      await pool.query("UPDATE leased_items SET lease_id = NULL, lease_until = NULL WHERE key = $1 AND lease_id = $2", [key, token]);
    },
  };
}

/** One page of an item: a write fenced by the token; false when the item is no longer the token's. */
async function writePage(key: string, token: string, last: boolean): Promise<boolean> {
  const result = await pool.query(
    "UPDATE leased_items SET pages = pages + 1, done = $3, worked_by = worked_by || $2 WHERE key = $1 AND lease_id = $2",
    [key, token, last],
  );
  return (result.rowCount ?? 0) > 0;
}

/** A gate work waits at between pages; open() lets the next page through. */
function gate() {
  let waiting: Array<() => void> = [];
  let arrived: (() => void) | undefined;
  return {
    wait: () =>
      new Promise<void>((resolve) => {
        waiting.push(resolve);
        arrived?.();
      }),
    /** Resolves once some work waits at the gate. */
    reached: () => (waiting.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => (arrived = resolve))),
    open() {
      const opened = waiting;
      waiting = [];
      for (const resolve of opened) resolve();
    },
  };
}

function worker(options: Omit<Parameters<typeof createLeasedWorker<string>>[0], "name" | "logger">): LeasedWorker {
  const created = createLeasedWorker({ name: "test item", logger, ...options });
  workers.push(created);
  return created;
}

const items = async () =>
  (
    await pool.query<{ key: string; pages: number; done: boolean; lease_id: string | null; worked_by: string[] }>(
      "SELECT key, pages, done, lease_id, worked_by FROM leased_items ORDER BY key",
    )
  ).rows;

test("each free item is claimed once, worked to its end with at most `concurrency` at once, and released", async () => {
  await pool.query("INSERT INTO leased_items (key) SELECT 'item-' || g FROM generate_series(1, 5) g");
  let inFlight = 0;
  let most = 0;
  const jobs = worker({
    lease: itemLeases(60_000),
    concurrency: 2,
    pollMs: 3_600_000,
    clock: new ManualClock(start),
    async work(key, token, held) {
      most = Math.max(most, ++inFlight);
      for (let page = 1; held() && (await writePage(key, token, page === 3)) && page < 3; page++);
      inFlight--;
    },
  });
  await jobs.idle();
  const rows = await items();
  expect(rows.map((r) => [r.key, r.pages, r.done, r.lease_id])).toEqual([1, 2, 3, 4, 5].map((n) => [`item-${n}`, 3, true, null]));
  // One token per item: claimed once.
  for (const row of rows) expect(new Set(row.worked_by).size).toBe(1);
  expect(most).toBe(2);
});

test("a lease that lapsed (its holder stalled) is taken by another worker; the first holder's next write is fenced off", async () => {
  await pool.query("INSERT INTO leased_items (key) VALUES ('slow')");
  const leaseMs = 60_000;
  const between = gate();
  const refused: boolean[] = [];
  // The first holder's clock stands still; the second's is past the first's lease.
  const first = worker({
    lease: itemLeases(leaseMs),
    clock: new ManualClock(start),
    pollMs: 3_600_000,
    async work(key, token, held) {
      while (held() && (await writePage(key, token, false))) await between.wait();
      refused.push(held());
    },
  });
  const firstDone = first.idle();
  await between.reached();
  const second = worker({
    lease: itemLeases(leaseMs),
    clock: new ManualClock(new Date(start.getTime() + leaseMs)),
    pollMs: 3_600_000,
    work: async (key, token) => void (await writePage(key, token, true)),
  });
  await second.idle();
  between.open();
  await firstDone;
  const [row] = await items();
  expect(row).toMatchObject({ pages: 2, done: true, lease_id: null });
  expect(new Set(row!.worked_by).size).toBe(2);
  // Its write refused, the first holder stopped although its own view (no heartbeat yet) still said held.
  expect(refused).toEqual([true]);
});

test("the heartbeat extends the lease every third of it by the worker's clock; once the lease is lost, held() turns false", async () => {
  await pool.query("INSERT INTO leased_items (key) VALUES ('held')");
  const clock = new ManualClock(start);
  const leaseMs = 150;
  // Everyone waiting for the next heartbeat hears it.
  let beats: Array<(held: boolean) => void> = [];
  const nextBeat = () => new Promise<boolean>((resolve) => beats.push(resolve));
  const beat = (held: boolean) => {
    const waiting = beats;
    beats = [];
    for (const resolve of waiting) resolve(held);
  };
  let heldAtEnd: boolean | undefined;
  let claimed: (() => void) | undefined;
  const working = new Promise<void>((resolve) => (claimed = resolve));
  const jobs = worker({
    lease: itemLeases(leaseMs, beat),
    clock,
    pollMs: 3_600_000,
    async work(_key, _token, held) {
      claimed!();
      while (held()) await nextBeat();
      heldAtEnd = held();
    },
  });
  const done = jobs.idle();
  await working;
  clock.advance(10_000);
  // A beat that set out before the clock moved may come first; one after it extends from the new time.
  const leaseUntil = async () => ((await pool.query("SELECT lease_until FROM leased_items")).rows[0].lease_until as Date).getTime();
  while ((await leaseUntil()) < start.getTime() + 10_000) expect(await nextBeat()).toBe(true);
  expect(await leaseUntil()).toBe(start.getTime() + 10_000 + leaseMs);
  // Taken over behind its back.
  await pool.query("UPDATE leased_items SET lease_id = 'someone else'");
  await done;
  expect(heldAtEnd).toBe(false);
  // Not released by the one that lost it: the lease is the new holder's.
  expect((await items())[0]).toMatchObject({ lease_id: "someone else" });
});

test("stop() waits for the page in flight, then releases the item for another worker at once", async () => {
  await pool.query("INSERT INTO leased_items (key) VALUES ('long')");
  const clock = new ManualClock(start);
  const between = gate();
  const first = worker({
    lease: itemLeases(60_000),
    clock,
    pollMs: 3_600_000,
    async work(key, token, held) {
      while (held() && (await writePage(key, token, false))) await between.wait();
    },
  });
  void first.idle();
  await between.reached();
  let stopped = false;
  const stopping = first.stop().then(() => (stopped = true));
  await pool.query("SELECT 1");
  expect(stopped).toBe(false);
  between.open();
  await stopping;
  expect((await items())[0]).toMatchObject({ pages: 1, done: false, lease_id: null });
  // Same clock, no lease to wait out.
  const second = worker({
    lease: itemLeases(60_000),
    clock,
    pollMs: 3_600_000,
    work: (key, token) => writePage(key, token, true).then(() => {}),
  });
  await second.idle();
  expect((await items())[0]).toMatchObject({ pages: 2, done: true, lease_id: null });
});

test("a NOTIFY on its topic wakes it (the item named first), and so does the notifier coming back after its connection was killed", async () => {
  const notifier = createNotifier({
    connectionString: database.url,
    logger,
    applicationName: "leased-worker-test",
    schedule: (run) => {
      const immediate = setImmediate(run);
      return () => clearImmediate(immediate);
    },
  });
  try {
    const order: string[] = [];
    let worked: (() => void) | undefined;
    const jobs = worker({
      lease: itemLeases(60_000),
      concurrency: 1,
      // Never polls in the test: only a wake-up makes it look.
      pollMs: 3_600_000,
      topic: "test_items",
      notifier,
      clock: new ManualClock(start),
      async work(key, token) {
        order.push(key);
        await writePage(key, token, true);
        if (order.length % 3 === 0) worked?.();
      },
    });
    await jobs.start();
    await jobs.idle();
    let all = new Promise<void>((resolve) => (worked = resolve));
    await pool.query("INSERT INTO leased_items (key) VALUES ('a'), ('b'), ('c')");
    await pool.query("SELECT pg_notify('test_items', 'c')");
    await all;
    expect(order).toEqual(["c", "a", "b"]);

    // Stored while nobody listened: found when the connection is back.
    all = new Promise<void>((resolve) => (worked = resolve));
    const [listening] = (
      await pool.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = 'leased-worker-test'")
    ).rows;
    await pool.query("INSERT INTO leased_items (key) VALUES ('d'), ('e'), ('f')");
    await pool.query("SELECT pg_terminate_backend($1)", [listening!.pid]);
    await all;
    expect(order).toEqual(["c", "a", "b", "d", "e", "f"]);
  } finally {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await notifier.close();
  }
});
