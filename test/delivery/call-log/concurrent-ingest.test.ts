import pg from "pg";
import { expect } from "vitest";
import { type MessageToStore, singleNodeJobTable } from "../../../src/db/job-table/index.js";
import { createPool } from "../../../src/db/pool.js";
import { testWith } from "../../helpers/fixtures.js";
import { eventually } from "../../helpers/process.js";
import { startReceiver, type Receiver } from "../../helpers/receiver.js";
import type { TestServer } from "../../helpers/server.js";
import { arrivals, batchesPerCall, createBatchedWebhook, trackCall } from "./log-support.js";

// The loader reads calls in snapshot bursts: a call whose transaction took
// its id early and committed late (after later ones were delivered) is read
// in a later burst, never skipped; a transaction left open elsewhere on the
// server holds nothing up.
const test = testWith({ server: { config: { delivery: { callLog: true, pollIntervalMs: 100 } } } });
let writers: pg.Pool;
const receivers: Receiver[] = [];
test.beforeAll(({ database }) => {
  writers = createPool({ connectionString: database.url, max: 10 });
});
test.afterAll(async () => {
  await writers.end();
});
test.afterEach(async ({ server }) => {
  await server.waypost.delivery!.settle();
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

async function batchedOnLog(server: TestServer) {
  const receiver = await startReceiver();
  receivers.push(receiver);
  const source = await server.createSource();
  const destination = await createBatchedWebhook(server, [source.id], receiver.url);
  await server.waypost.delivery!.syncCallLog();
  return { receiver, source, destination };
}

const stored = (messageId: string): MessageToStore => ({
  messageId,
  type: "track",
  userId: `u-${messageId}`,
  payload: JSON.stringify({ type: "track", messageId, userId: `u-${messageId}`, event: "E" }),
  integrations: undefined,
});

/** Stores calls through the real store statement in a transaction of its own, committed when `commitWhen` resolves. */
async function storeIn(sourceId: string, ids: string[], commitWhen?: () => Promise<unknown>): Promise<void> {
  const client = await writers.connect();
  try {
    await client.query("BEGIN");
    const result = await singleNodeJobTable.storeMessages(client, sourceId, new Date(), ids.map(stored));
    expect(result.fresh).toBe(true);
    await commitWhen?.();
    await client.query("COMMIT");
  } finally {
    client.release();
  }
}

test("8 writers, long and short transactions interleaved: no call skipped, none sent twice", { timeout: 60_000 }, async ({ server }) => {
  const { receiver, source, destination } = await batchedOnLog(server);
  const arrived = (prefix: string) => [...arrivals(receiver.requests).keys()].filter((id) => id.startsWith(prefix)).length;
  const all: string[] = [];
  const named = (prefix: string, n: number) => {
    const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
    all.push(...ids);
    return ids;
  };
  // Two long writers: each stores (taking its transaction id early), then
  // has a call stored and committed after it (a later transaction id) and
  // holds its transaction open until that call was delivered.
  const long = [0, 1].map(async (w) => {
    for (let round = 0; round < 3; round++) {
      const after = named(`after${w}-${round}`, 1);
      await storeIn(source.id, named(`long${w}-${round}`, 15), async () => {
        await storeIn(source.id, after);
        await eventually(async () => arrived(after[0]!) > 0, 30_000);
      });
    }
  });
  // Six short writers: a transaction per round, committed at once.
  const short = [0, 1, 2, 3, 4, 5].map(async (w) => {
    for (let round = 0; round < 8; round++) await storeIn(source.id, named(`short${w}-${round}`, 20));
  });
  await Promise.all([...long, ...short]);
  server.waypost.delivery!.poke();
  await eventually(async () => arrivals(receiver.requests).size === all.length, 30_000);
  await server.waypost.delivery!.settle();

  const counts = arrivals(receiver.requests);
  expect([...counts.keys()].sort()).toEqual([...all].sort());
  expect([...counts].filter(([, n]) => n !== 1)).toEqual([]);
  // The late commits came after calls of later transaction ids were delivered: a position past them did not skip them.
  const xids = await server.pool.query<{ late: boolean }>(
    `SELECT l.log_xid < a.log_xid AS late FROM messages l JOIN messages a ON a.message_id = 'after' || substr(l.message_id, 5, 3) || '-0'
      WHERE l.message_id LIKE 'long%-0'`,
  );
  expect(xids.rows.map((row) => row.late)).toEqual([true, true, true, true, true, true]);
  const covered = await batchesPerCall(server.pool, destination.id);
  expect([...covered].filter(([, n]) => n !== 1)).toEqual([]);
  expect(covered.size).toBe(all.length);
});

test("a transaction open in another database of the server does not hold the loader up", async ({ server, database }) => {
  const { receiver, source } = await batchedOnLog(server);
  const elsewhere = new URL(database.url);
  elsewhere.pathname = "/postgres";
  const other = new pg.Client({ connectionString: elsewhere.toString() });
  await other.connect();
  try {
    // A transaction id taken and held: every snapshot of the server lists it in progress until it ends.
    await other.query("BEGIN");
    const { rows } = await other.query("SELECT pg_current_xact_id()::text AS xid");
    const ids = Array.from({ length: 30 }, (_, i) => `o-${i}`);
    await server.tracking(source.writeKey).batch({ batch: ids.map((id) => trackCall(id)) });
    await eventually(async () => arrivals(receiver.requests).size === ids.length);
    // The other database's transaction is still open: the calls went past it.
    const open = await server.pool.query("SELECT pg_visible_in_snapshot($1::xid8, pg_current_snapshot()) AS visible", [rows[0].xid]);
    expect(open.rows[0].visible).toBe(false);
  } finally {
    await other.query("ROLLBACK").catch(() => {});
    await other.end();
  }
});
