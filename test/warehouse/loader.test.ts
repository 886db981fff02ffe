import type pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createWarehouseLoader, type WarehouseCall, type WarehouseLoader } from "../../src/warehouse/loader.js";
import { createPool } from "../../src/db/pool.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";

let warehouse: TestDatabase;
let db: pg.Pool;
let mismatches = 0;
const loaders: WarehouseLoader[] = [];

function loader(schema: string, url = warehouse.url): WarehouseLoader {
  const created = createWarehouseLoader({ url, schema, onMismatches: (n) => (mismatches += n), connectTimeoutMs: 2_000 });
  loaders.push(created);
  return created;
}

beforeAll(async () => {
  warehouse = await createTestDatabase({ migrated: false });
  // createPool listens for an idle connection's error: the warehouse's database is dropped
  // WITH (FORCE) at the end, which can reach a connection the ended pool is still closing.
  db = createPool({ connectionString: warehouse.url, max: 2 });
});

afterAll(async () => {
  for (const l of loaders) await l.close();
  await db.end();
  await warehouse.drop();
});

const receivedAt = new Date("2026-11-22T10:04:06.000Z");
let seq = 0;
function call(body: Record<string, unknown>): WarehouseCall {
  return { payload: JSON.stringify({ context: {}, timestamp: "2026-11-22T10:04:05.123Z", messageId: `m${++seq}`, ...body }), receivedAt };
}

async function rows(sql: string, values: unknown[] = []) {
  return (await db.query(sql, values)).rows;
}

async function columnTypes(schema: string, table: string): Promise<Record<string, string>> {
  const result = await db.query<{ column_name: string; data_type: string }>(
    "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2",
    [schema, table],
  );
  return Object.fromEntries(result.rows.map((r) => [r.column_name, r.data_type]));
}

test("every call type lands in its table with the layout's columns, and types come from first values", async () => {
  const l = loader("layout");
  const outcomes = await l.load([
    call({ type: "identify", userId: "u1", traits: { plan: "pro", seats: 3 }, context: { library: { name: "web" } } }),
    call({
      type: "track",
      userId: "u1",
      event: "Order Completed",
      properties: { total: 30.5, count: 2, paid: true, at: "2026-11-01T00:00:00Z", tags: ["a"] },
    }),
    call({ type: "page", userId: "u1", name: "Home", properties: { path: "/" }, context: { page: { path: "/" } } }),
    call({ type: "screen", anonymousId: "a1", name: "Main" }),
    call({ type: "group", userId: "u1", groupId: "g1", traits: { size: 10 } }),
    call({ type: "alias", "Previous ID": "a1", "User ID": "u1" }),
  ]);
  expect(outcomes).toEqual(Array(6).fill({ outcome: "success" }));
  const tables = await rows("SELECT table_name FROM information_schema.tables WHERE table_schema = 'layout' ORDER BY 1");
  expect(tables.map((t) => t.table_name)).toEqual([
    "aliases",
    "groups",
    "identifies",
    "order_completed",
    "pages",
    "screens",
    "tracks",
    "users",
  ]);
  expect(await columnTypes("layout", "order_completed")).toMatchObject({
    id: "text",
    received_at: "timestamp with time zone",
    total: "double precision",
    count: "bigint",
    paid: "boolean",
    at: "timestamp with time zone",
    tags: "jsonb",
    event: "text",
    event_text: "text",
  });
  expect(await columnTypes("layout", "tracks")).not.toHaveProperty("total");
  expect(await rows("SELECT event, event_text, user_id FROM layout.tracks")).toEqual([
    { event: "order_completed", event_text: "Order Completed", user_id: "u1" },
  ]);
  expect(await rows("SELECT id, plan, seats FROM layout.users")).toEqual([{ id: "u1", plan: "pro", seats: "3" }]);
  expect(await rows("SELECT context_library_name FROM layout.identifies")).toEqual([{ context_library_name: "web" }]);
  expect(await rows("SELECT name, path, context_page_path FROM layout.pages")).toEqual([
    { name: "Home", path: "/", context_page_path: "/" },
  ]);
  expect(await rows("SELECT group_id, size FROM layout.groups")).toEqual([{ group_id: "g1", size: "10" }]);
  expect(await rows("SELECT previous_id, user_id FROM layout.aliases")).toEqual([{ previous_id: "a1", user_id: "u1" }]);
});

test("a new field adds a column; a mismatched value is stored NULL and counted", async () => {
  const l = loader("evolve");
  await l.load([call({ type: "track", userId: "u", event: "Paid", properties: { amount: 5 } })]);
  const before = mismatches;
  const outcomes = await l.load([call({ type: "track", userId: "u", event: "Paid", properties: { amount: "five", currency: "EUR" } })]);
  expect(outcomes).toEqual([{ outcome: "success" }]);
  expect(mismatches - before).toBe(1);
  expect(await columnTypes("evolve", "paid")).toMatchObject({ amount: "bigint", currency: "text" });
  expect(await rows("SELECT amount, currency FROM evolve.paid ORDER BY currency NULLS FIRST")).toEqual([
    { amount: "5", currency: null },
    { amount: null, currency: "EUR" },
  ]);
});

test("users: one row per user, traits merged, the latest call's value wins", async () => {
  const l = loader("merge");
  await l.load([
    call({ type: "identify", userId: "u1", traits: { plan: "free", email: "a@x" } }),
    call({ type: "identify", userId: "u1", traits: { plan: "pro" } }),
  ]);
  await l.load([call({ type: "identify", userId: "u1", traits: { seats: 4 } })]);
  expect(await rows("SELECT id, plan, email, seats FROM merge.users")).toEqual([{ id: "u1", plan: "pro", email: "a@x", seats: "4" }]);
});

test("a duplicate message id gives one row, in one batch or across retries", async () => {
  const l = loader("dups");
  const same = call({ type: "track", userId: "u", event: "Clicked" });
  expect(await l.load([same, same])).toEqual([{ outcome: "success" }, { outcome: "success" }]);
  await l.load([same]);
  expect(await rows("SELECT count(*)::int AS n FROM dups.tracks")).toEqual([{ n: 1 }]);
  expect(await rows("SELECT count(*)::int AS n FROM dups.clicked")).toEqual([{ n: 1 }]);
});

test("hostile event and property names are stored as names and change no SQL", async () => {
  const l = loader("hostile");
  const event = 'x"; DROP TABLE tracks; --';
  const outcomes = await l.load([
    call({ type: "track", userId: "u", event, properties: { 'a"); DROP TABLE hostile.tracks; --': 1, "Robert'); --": "b", "": "empty" } }),
  ]);
  expect(outcomes).toEqual([{ outcome: "success" }]);
  expect(await rows("SELECT event_text FROM hostile.tracks")).toEqual([{ event_text: event }]);
  const columns = await columnTypes("hostile", "x_drop_table_tracks");
  expect(columns).toHaveProperty("a_drop_table_hostile_tracks", "bigint");
  expect(columns).toHaveProperty("robert", "text");
});

test("names over 63 bytes are cut with a hash, and two of them stay two columns", async () => {
  const l = loader("long");
  const long = "a".repeat(80);
  await l.load([call({ type: "track", userId: "u", event: `E ${long}`, properties: { [`${long}1`]: 1, [`${long}2`]: 2 } })]);
  const tables = await rows("SELECT table_name FROM information_schema.tables WHERE table_schema = 'long' AND table_name LIKE 'e_%'");
  expect(tables).toHaveLength(1);
  expect(Buffer.byteLength(tables[0].table_name as string)).toBeLessThanOrEqual(63);
  const columns = Object.keys(await columnTypes("long", tables[0].table_name as string)).filter((c) => c.startsWith("aaa"));
  expect(columns).toHaveLength(2);
});

test("one bad call fails alone: the rest of its batch commits", async () => {
  const l = loader("alone");
  // Postgres keeps at most 1,600 columns per table: the second call's new properties cannot all be columns.
  const props = (from: number, n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${from + i}`, true]));
  expect(await l.load([call({ type: "track", userId: "u", event: "Wide", properties: props(0, 1580) })])).toEqual([{ outcome: "success" }]);
  const wide = props(1580, 30);
  const outcomes = await l.load([
    call({ type: "track", userId: "u", event: "Wide", properties: wide }),
    call({ type: "track", userId: "u", event: "Fine", properties: { ok: true } }),
    { payload: "not json" },
  ]);
  expect(outcomes[0]).toMatchObject({ outcome: "permanent", error: expect.stringContaining("refused column") });
  expect(outcomes[1]).toEqual({ outcome: "success" });
  expect(outcomes[2]).toMatchObject({ outcome: "permanent" });
  expect(await rows("SELECT count(*)::int AS n FROM alone.fine")).toEqual([{ n: 1 }]);
});

test("a warehouse that is down fails the batch retryably; back up, the retry loses nothing and duplicates nothing", async () => {
  const target = new URL(warehouse.url);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  try {
    const url = new URL(warehouse.url);
    url.port = String(proxy.port);
    const l = loader("outage", url.toString());
    const batch = [call({ type: "track", userId: "u", event: "Kept" }), call({ type: "identify", userId: "u", traits: { a: 1 } })];
    await l.load([batch[0]!]);
    proxy.down();
    const down = await l.load(batch);
    expect(down.map((o) => o.outcome)).toEqual(["retryable", "retryable"]);
    proxy.up();
    expect(await l.load(batch)).toEqual([{ outcome: "success" }, { outcome: "success" }]);
    expect(await rows("SELECT count(*)::int AS n FROM outage.tracks")).toEqual([{ n: 1 }]);
    expect(await rows("SELECT count(*)::int AS n FROM outage.identifies")).toEqual([{ n: 1 }]);
  } finally {
    await proxy.close();
  }
});

test("a delete notification removes the user's rows from every table of the schema, and no one else's", async () => {
  const l = loader("forget");
  await l.load([
    call({ type: "identify", userId: "u1", traits: { a: 1 } }),
    call({ type: "identify", userId: "u2", traits: { a: 2 } }),
    call({ type: "track", userId: "u1", event: "Bought" }),
    call({ type: "track", userId: "u2", event: "Bought" }),
    call({ type: "page", userId: "u1", name: "Home" }),
  ]);
  const deleted = await l.load([{ payload: JSON.stringify({ type: "delete", userId: "u1", timestamp: "2026-11-22T10:05:00.000Z" }) }]);
  expect(deleted).toEqual([{ outcome: "success" }]);
  for (const table of ["identifies", "tracks", "bought", "pages"]) {
    expect(await rows(`SELECT DISTINCT user_id FROM forget.${table}`)).toEqual(table === "pages" ? [] : [{ user_id: "u2" }]);
  }
  expect(await rows("SELECT id FROM forget.users")).toEqual([{ id: "u2" }]);
});
