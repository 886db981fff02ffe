import { afterAll, expect } from "vitest";
import {
  createWarehouseLoader,
  type WarehouseCall,
  type WarehouseLoader,
  type WarehouseLoaderOptions,
} from "../../src/warehouse/loader.js";
import { databaseIdentity } from "../../src/warehouse/ownership.js";
import type { Pool } from "../../src/db/pool.js";
import type { TestDatabase } from "../helpers/database.js";
import { testWith } from "../helpers/fixtures.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";

const test = testWith({ database: { migrated: false, max: 2 } });
let mismatches = 0;
const loaders: WarehouseLoader[] = [];

let refusedColumns = 0;

function loader(
  warehouse: TestDatabase,
  schema: string,
  url = warehouse.url,
  extra: Partial<WarehouseLoaderOptions> = {},
): WarehouseLoader {
  const created = createWarehouseLoader({
    url,
    schema,
    onDiscards: (counts) => {
      mismatches += counts.typeMismatches;
      refusedColumns += counts.refusedColumns;
    },
    connectTimeoutMs: 2_000,
    ...extra,
  });
  loaders.push(created);
  return created;
}

afterAll(async () => {
  for (const l of loaders) await l.close();
});

const receivedAt = new Date("2026-11-22T10:04:06.000Z");
let seq = 0;
function call(body: Record<string, unknown>): WarehouseCall {
  return { payload: JSON.stringify({ context: {}, timestamp: "2026-11-22T10:04:05.123Z", messageId: `m${++seq}`, ...body }), receivedAt };
}

async function rows(db: Pool, sql: string, values: unknown[] = []) {
  return (await db.query(sql, values)).rows;
}

async function columnTypes(db: Pool, schema: string, table: string): Promise<Record<string, string>> {
  const result = await db.query<{ column_name: string; data_type: string }>(
    "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2",
    [schema, table],
  );
  return Object.fromEntries(result.rows.map((r) => [r.column_name, r.data_type]));
}

test("every call type lands in its table with the layout's columns, and types come from first values", async ({
  pool: db,
  database: warehouse,
}) => {
  const l = loader(warehouse, "layout");
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
  const tables = await rows(db, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'layout' ORDER BY 1");
  expect(tables.map((t) => t.table_name)).toEqual([
    "aliases",
    "groups",
    "identifies",
    "order_completed",
    "pages",
    "screens",
    "tracks",
    "users",
    "waypost_discards",
  ]);
  expect(await columnTypes(db, "layout", "order_completed")).toMatchObject({
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
  expect(await columnTypes(db, "layout", "tracks")).not.toHaveProperty("total");
  expect(await rows(db, "SELECT event, event_text, user_id FROM layout.tracks")).toEqual([
    { event: "order_completed", event_text: "Order Completed", user_id: "u1" },
  ]);
  expect(await rows(db, "SELECT id, plan, seats FROM layout.users")).toEqual([{ id: "u1", plan: "pro", seats: "3" }]);
  expect(await rows(db, "SELECT context_library_name FROM layout.identifies")).toEqual([{ context_library_name: "web" }]);
  expect(await rows(db, "SELECT name, path, context_page_path FROM layout.pages")).toEqual([
    { name: "Home", path: "/", context_page_path: "/" },
  ]);
  expect(await rows(db, "SELECT group_id, size FROM layout.groups")).toEqual([{ group_id: "g1", size: "10" }]);
  expect(await rows(db, "SELECT previous_id, user_id FROM layout.aliases")).toEqual([{ previous_id: "a1", user_id: "u1" }]);
});

test("a new field adds a column; a mismatched value is stored NULL and counted", async ({ pool: db, database: warehouse }) => {
  const l = loader(warehouse, "evolve");
  await l.load([call({ type: "track", userId: "u", event: "Paid", properties: { amount: 5 } })]);
  const before = mismatches;
  const outcomes = await l.load([call({ type: "track", userId: "u", event: "Paid", properties: { amount: "five", currency: "EUR" } })]);
  expect(outcomes).toEqual([
    {
      outcome: "success",
      discarded: 1,
      note: "1 value not stored in its column, kept in waypost_discards: paid.amount: value does not fit the bigint column, stored NULL",
    },
  ]);
  expect(mismatches - before).toBe(1);
  expect(await columnTypes(db, "evolve", "paid")).toMatchObject({ amount: "bigint", currency: "text" });
  expect(await rows(db, "SELECT amount, currency FROM evolve.paid ORDER BY currency NULLS FIRST")).toEqual([
    { amount: "5", currency: null },
    { amount: null, currency: "EUR" },
  ]);
});

test("users: one row per user, traits merged, the latest call's value wins", async ({ pool: db, database: warehouse }) => {
  const l = loader(warehouse, "merge");
  await l.load([
    call({ type: "identify", userId: "u1", traits: { plan: "free", email: "a@x" } }),
    call({ type: "identify", userId: "u1", traits: { plan: "pro" } }),
  ]);
  await l.load([call({ type: "identify", userId: "u1", traits: { seats: 4 } })]);
  expect(await rows(db, "SELECT id, plan, email, seats FROM merge.users")).toEqual([{ id: "u1", plan: "pro", email: "a@x", seats: "4" }]);
});

test("a duplicate message id gives one row, in one batch or across retries", async ({ pool: db, database: warehouse }) => {
  const l = loader(warehouse, "dups");
  const same = call({ type: "track", userId: "u", event: "Clicked" });
  expect(await l.load([same, same])).toEqual([{ outcome: "success" }, { outcome: "success" }]);
  await l.load([same]);
  expect(await rows(db, "SELECT count(*)::int AS n FROM dups.tracks")).toEqual([{ n: 1 }]);
  expect(await rows(db, "SELECT count(*)::int AS n FROM dups.clicked")).toEqual([{ n: 1 }]);
});

test("hostile event and property names are stored as names and change no SQL", async ({ pool: db, database: warehouse }) => {
  const l = loader(warehouse, "hostile");
  const event = 'x"; DROP TABLE tracks; --';
  const outcomes = await l.load([
    call({ type: "track", userId: "u", event, properties: { 'a"); DROP TABLE hostile.tracks; --': 1, "Robert'); --": "b", "": "empty" } }),
  ]);
  expect(outcomes).toEqual([{ outcome: "success" }]);
  expect(await rows(db, "SELECT event_text FROM hostile.tracks")).toEqual([{ event_text: event }]);
  const columns = await columnTypes(db, "hostile", "x_drop_table_tracks");
  expect(columns).toHaveProperty("a_drop_table_hostile_tracks", "bigint");
  expect(columns).toHaveProperty("robert", "text");
});

test("names over 63 bytes are cut with a hash, and two of them stay two columns", async ({ pool: db, database: warehouse }) => {
  const l = loader(warehouse, "long");
  const long = "a".repeat(80);
  await l.load([call({ type: "track", userId: "u", event: `E ${long}`, properties: { [`${long}1`]: 1, [`${long}2`]: 2 } })]);
  const tables = await rows(db, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'long' AND table_name LIKE 'e_%'");
  expect(tables).toHaveLength(1);
  expect(Buffer.byteLength(tables[0].table_name as string)).toBeLessThanOrEqual(63);
  const columns = Object.keys(await columnTypes(db, "long", tables[0].table_name as string)).filter((c) => c.startsWith("aaa"));
  expect(columns).toHaveLength(2);
});

test("one bad call fails alone: the rest of its batch commits", async ({ pool: db, database: warehouse }) => {
  const l = loader(warehouse, "alone");
  // Postgres's jsonb refuses an unpaired surrogate escape: the database refuses the first call's row.
  const outcomes = await l.load([
    call({ type: "track", userId: "u", event: "Odd", properties: { tags: ["\ud800"] } }),
    call({ type: "track", userId: "u", event: "Fine", properties: { ok: true } }),
    { payload: "not json" },
  ]);
  expect(outcomes[0]).toMatchObject({
    outcome: "permanent",
    error: expect.stringContaining("invalid input syntax for type json: Unicode low surrogate"),
  });
  expect(outcomes[1]).toEqual({ outcome: "success" });
  expect(outcomes[2]).toMatchObject({ outcome: "permanent" });
  expect(await rows(db, "SELECT count(*)::int AS n FROM alone.fine")).toEqual([{ n: 1 }]);
});

test("a warehouse that is down fails the batch retryably; back up, the retry loses nothing and duplicates nothing", async ({
  database: warehouse,
  pool: db,
}) => {
  const target = new URL(warehouse.url);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  try {
    const url = new URL(warehouse.url);
    url.port = String(proxy.port);
    const l = loader(warehouse, "outage", url.toString());
    const batch = [call({ type: "track", userId: "u", event: "Kept" }), call({ type: "identify", userId: "u", traits: { a: 1 } })];
    await l.load([batch[0]!]);
    proxy.down();
    const down = await l.load(batch);
    expect(down.map((o) => o.outcome)).toEqual(["retryable", "retryable"]);
    proxy.up();
    expect(await l.load(batch)).toEqual([{ outcome: "success" }, { outcome: "success" }]);
    expect(await rows(db, "SELECT count(*)::int AS n FROM outage.tracks")).toEqual([{ n: 1 }]);
    expect(await rows(db, "SELECT count(*)::int AS n FROM outage.identifies")).toEqual([{ n: 1 }]);
  } finally {
    await proxy.close();
  }
});

test("a delete notification removes the user's rows from every table of the schema, and no one else's", async ({
  pool: db,
  database: warehouse,
}) => {
  const l = loader(warehouse, "forget");
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
    expect(await rows(db, `SELECT DISTINCT user_id FROM forget.${table}`)).toEqual(table === "pages" ? [] : [{ user_id: "u2" }]);
  }
  expect(await rows(db, "SELECT id FROM forget.users")).toEqual([{ id: "u2" }]);
});

async function discards(db: Pool, schema: string) {
  return rows(db, `SELECT table_name, column_name, row_id, user_id, value, reason FROM ${schema}.waypost_discards ORDER BY 1, 2, 3`);
}

test("impossible dates and year 0000 are stored as NULL and kept as discards; the call loads", async ({
  pool: db,
  database: warehouse,
}) => {
  const l = loader(warehouse, "dates");
  await l.load([call({ type: "track", userId: "u", event: "Booked", properties: { at: "2026-01-01T00:00:00Z" } })]);
  const before = mismatches;
  const outcomes = await l.load([
    call({ type: "track", userId: "u", event: "Booked", messageId: "feb30", properties: { at: "2026-02-30T10:00:00Z" } }),
    call({ type: "track", userId: "u", event: "Booked", messageId: "year0", properties: { at: "0000-01-01T00:00:00Z" } }),
  ]);
  expect(outcomes.map((o) => o.outcome)).toEqual(["success", "success"]);
  expect(outcomes[0]).toMatchObject({ discarded: 1, note: expect.stringContaining("booked.at: value is not a valid date-time") });
  expect(mismatches - before).toBe(2);
  expect(await rows(db, "SELECT id, at FROM dates.booked WHERE id IN ('feb30', 'year0') ORDER BY 1")).toEqual([
    { id: "feb30", at: null },
    { id: "year0", at: null },
  ]);
  expect(await discards(db, "dates")).toEqual([
    { table_name: "booked", column_name: "at", row_id: "feb30", user_id: "u", value: "2026-02-30T10:00:00Z", reason: expect.any(String) },
    { table_name: "booked", column_name: "at", row_id: "year0", user_id: "u", value: "0000-01-01T00:00:00Z", reason: expect.any(String) },
  ]);
});

test("orderId and order_id in one call keep both values: the snake_case key keeps the name, the other gets a hashed suffix", async ({
  pool: db,
  database: warehouse,
}) => {
  const l = loader(warehouse, "collide");
  const first = await l.load([
    call({ type: "track", userId: "u", event: "Ordered", messageId: "c1", properties: { orderId: "camel", order_id: "snake" } }),
  ]);
  // The other key order gives the same columns.
  const second = await l.load([
    call({ type: "track", userId: "u", event: "Ordered", messageId: "c2", properties: { order_id: "snake2", orderId: "camel2" } }),
  ]);
  expect([...first, ...second]).toEqual([{ outcome: "success" }, { outcome: "success" }]);
  const columns = Object.keys(await columnTypes(db, "collide", "ordered")).filter((c) => c.startsWith("order_id"));
  expect(columns.sort()).toEqual(["order_id", expect.stringMatching(/^order_id_[0-9a-f]{8}$/)]);
  const suffixed = columns.find((c) => c !== "order_id")!;
  expect(await rows(db, `SELECT id, order_id, "${suffixed}" AS other FROM collide.ordered ORDER BY id`)).toEqual([
    { id: "c1", order_id: "snake", other: "camel" },
    { id: "c2", order_id: "snake2", other: "camel2" },
  ]);
});

test("every row has loaded_at, sent_at is the client's sentAt, and tracks.event_table names a renamed event's table", async ({
  database: warehouse,
  pool: db,
}) => {
  const loadedAt = new Date("2026-11-22T11:00:00.000Z");
  const l = loader(warehouse, "times", warehouse.url, { now: () => loadedAt });
  const sentAt = new Date("2026-11-22T10:04:05.900Z");
  const outcomes = await l.load([
    { ...call({ type: "track", userId: "u", event: "Users", messageId: "t1" }), sentAt },
    call({ type: "identify", userId: "u", messageId: "i1", traits: { plan: "pro" } }),
  ]);
  expect(outcomes).toEqual([{ outcome: "success" }, { outcome: "success" }]);
  expect(await rows(db, "SELECT event, event_table, sent_at, loaded_at FROM times.tracks")).toEqual([
    { event: "users", event_table: "_users", sent_at: sentAt, loaded_at: loadedAt },
  ]);
  expect(await rows(db, "SELECT count(*)::int AS n FROM times._users WHERE loaded_at = $1", [loadedAt])).toEqual([{ n: 1 }]);
  expect(await rows(db, "SELECT sent_at, loaded_at FROM times.identifies")).toEqual([{ sent_at: null, loaded_at: loadedAt }]);
  expect(await rows(db, "SELECT loaded_at FROM times.users")).toEqual([{ loaded_at: loadedAt }]);
});

test("a column flood stops at the cap: later calls, new context fields included, still load, the rest kept as discards, no ALTER TABLE retried", async ({
  pool: db,
  database: warehouse,
}) => {
  // Counts ALTER TABLE statements run against this database (a sequence is not rolled back with a refused ALTER).
  await db.query("CREATE SEQUENCE IF NOT EXISTS public.alter_count");
  await db.query(`CREATE OR REPLACE FUNCTION public.count_alter() RETURNS event_trigger LANGUAGE plpgsql AS
    $$ BEGIN PERFORM nextval('public.alter_count'); END $$`);
  await db.query("CREATE EVENT TRIGGER count_alter ON ddl_command_start WHEN TAG IN ('ALTER TABLE') EXECUTE FUNCTION public.count_alter()");
  const alters = async () => Number((await rows(db, "SELECT last_value, is_called FROM public.alter_count"))[0].last_value);
  try {
    const l = loader(warehouse, "flood");
    const keys = (from: number, n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${from + i}`, `v${from + i}`]));
    const refusedBefore = refusedColumns;
    // Each call brings 400 new context fields (columns of tracks and of the event's table).
    for (let i = 0; i < 4; i++) {
      const outcomes = await l.load([
        call({ type: "track", userId: "u", event: "Flood", messageId: `f${i}`, context: keys(i * 400, 400) }),
      ]);
      expect(outcomes.map((o) => o.outcome)).toEqual(["success"]);
    }
    const tracks = Object.keys(await columnTypes(db, "flood", "tracks"));
    expect(tracks.length).toBe(1_000);
    expect(tracks).toContain("loaded_at");
    expect(refusedColumns - refusedBefore).toBeGreaterThan(0);
    // The cap reached, a call with a new context field loads; its value is kept in the discards table.
    const altersBefore = await alters();
    const later = await l.load([
      call({ type: "track", userId: "u", event: "Flood", messageId: "late", context: { brandNew: "x", ...keys(0, 2) } }),
      call({ type: "identify", userId: "u", messageId: "late-identify", traits: { plan: "pro" } }),
    ]);
    expect(later.map((o) => o.outcome)).toEqual(["success", "success"]);
    expect(later[0]).toMatchObject({ note: expect.stringContaining("tracks.context_brand_new") });
    expect(await rows(db, "SELECT context_k0 FROM flood.tracks WHERE id = 'late'")).toEqual([{ context_k0: "v0" }]);
    expect(await rows(db, "SELECT value, reason FROM flood.waypost_discards WHERE row_id = 'late' AND table_name = 'tracks'")).toEqual([
      { value: "x", reason: "the table has reached 1000 columns (WAYPOST_WAREHOUSE_MAX_COLUMNS)" },
    ]);
    // A flood keeps every value, in at most 51 rows per table row: 50 columns, and the rest as one JSON object.
    const perRow = await rows(
      db,
      "SELECT row_id, count(*)::int AS n, max(value) FILTER (WHERE column_name = '*') AS rest FROM flood.waypost_discards WHERE table_name = 'tracks' GROUP BY 1 ORDER BY 1",
    );
    const third = perRow.find((r) => r.row_id === "f3")!;
    expect(third.n).toBe(51);
    const rest = JSON.parse(third.rest as string) as Record<string, string>;
    expect(Object.keys(rest).length + 50).toBe(400);
    expect(rest.context_k1599).toBe("v1599");
    // Only identifies was new: no ALTER TABLE was tried for the full tables.
    expect(await alters()).toBe(altersBefore);
    await l.load([call({ type: "track", userId: "u", event: "Flood", messageId: "later", context: { another: 1 } })]);
    expect(await alters()).toBe(altersBefore);
  } finally {
    await db.query("DROP EVENT TRIGGER count_alter");
  }
});

test("a column Postgres refuses keeps Postgres's reason, is remembered, and the call loads without it", async ({
  database: warehouse,
  pool: db,
}) => {
  // Past the 1,600 columns Postgres allows (a cap set above it, as no setting can).
  const l = loader(warehouse, "pglimit", warehouse.url, { maxColumns: 5_000 });
  const props = (from: number, n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${from + i}`, true]));
  expect(await l.load([call({ type: "track", userId: "u", event: "Wide", properties: props(0, 1580) })])).toEqual([{ outcome: "success" }]);
  const outcomes = await l.load([call({ type: "track", userId: "u", event: "Wide", messageId: "wide2", properties: props(1580, 30) })]);
  expect(outcomes[0]).toMatchObject({ outcome: "success", note: expect.stringContaining("tables can have at most 1600 columns") });
  const refused = await rows(db, "SELECT count(*)::int AS n, min(reason) AS reason FROM pglimit.waypost_discards WHERE row_id = 'wide2'");
  expect(refused[0].n).toBeGreaterThan(0);
  expect(refused[0].reason).toContain("Postgres refused the column: tables can have at most 1600 columns");
});

test("a warehouse that is Waypost's own database is refused before anything is loaded", async ({ database: warehouse, pool: db }) => {
  const own = await databaseIdentity(db);
  const l = loader(warehouse, "own", warehouse.url, { ownDatabase: async () => own });
  const outcomes = await l.load([call({ type: "track", userId: "u", event: "Nope" })]);
  expect(outcomes).toEqual([
    { outcome: "permanent", error: "warehouse URL is Waypost's own database: a warehouse must be another database" },
  ]);
  expect(await rows(db, "SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = 'own'")).toEqual([{ n: 0 }]);
  // Another database of the same server is fine.
  const elsewhere = loader(warehouse, "elsewhere", warehouse.url, { ownDatabase: async () => ({ ...own, database: "someone_else" }) });
  expect(await elsewhere.load([call({ type: "track", userId: "u", event: "Yes" })])).toEqual([{ outcome: "success" }]);
});

test("a URL saved with a TLS file parameter is refused before anything connects", async ({ database: warehouse }) => {
  const l = loader(warehouse, "tls", `${warehouse.url}?sslrootcert=/dev/zero`);
  const outcomes = await l.load([call({ type: "track", userId: "u", event: "Nope" })]);
  expect(outcomes).toEqual([{ outcome: "permanent", error: expect.stringContaining('parameter "sslrootcert" is not allowed') }]);
});
