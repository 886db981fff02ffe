import { expect } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { feedQuery, searchQuery } from "../../src/db/queries/delivery-search.js";
import { minuteSeriesQuery } from "../../src/db/queries/delivery-stats.js";
import { countReplayableQuery, replayBatchQuery, type Query } from "../../src/db/job-table/index.js";
import { testWith } from "../helpers/fixtures.js";
import { fillDeliveries, type FilledTable } from "../helpers/fill-deliveries.js";

// The delivery search, feed, stats and replay queries on a filled job table
// use index scans, never a sequential scan of the history, the messages or
// the attempts (a day's partition of a few hundred rows excepted: Postgres
// reads a table that small without its index, and the week of filled rows
// leaves a sliver in its oldest day whose size depends on the time of day). The queue holds only the backlog: a search by
// message or user reads it whole. WAYPOST_PLAN_ROWS=1000000 runs it on a million rows;
// WAYPOST_PLAN_PRINT=1 prints the plans (EXPLAIN ANALYZE) as well.
const test = testWith();
const rows = Number(process.env.WAYPOST_PLAN_ROWS ?? 100_000);
const print = process.env.WAYPOST_PLAN_PRINT === "1";

let table: FilledTable;
/** The tables that must never be read whole: the messages, and each day of history and attempts of more than a sliver. */
let large: string[];

test.beforeAll(async ({ pool }) => {
  table = await fillDeliveries(pool, rows);
  const found = await pool.query<{ relname: string }>(
    `SELECT relname FROM pg_class
      WHERE relkind = 'r' AND reltuples > 1000 AND (relname = 'messages' OR relname ~ '^delivery_(history|attempts)_')`,
  );
  large = found.rows.map((r) => r.relname);
}, 1_800_000);

async function plan(pool: Pool, name: string, query: Query): Promise<string> {
  const explain = print ? "EXPLAIN (ANALYZE, COSTS OFF, TIMING ON, SUMMARY ON)" : "EXPLAIN (COSTS OFF)";
  // The UPDATE of a replay batch runs in a transaction that is rolled back.
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await client.query<{ "QUERY PLAN": string }>(`${explain} ${query.text}`, query.values);
    const text = result.rows.map((r) => r["QUERY PLAN"]).join("\n");
    if (print) console.log(`--- ${name} (${rows} deliveries)\n${text}`);
    return text;
  } finally {
    await client.query("ROLLBACK");
    client.release();
  }
}

function expectIndexOnly(text: string, ...indexes: (string | RegExp)[]) {
  expect(large).toContain("messages");
  for (const name of large) expect(text).not.toMatch(new RegExp(`Seq Scan on ${name}\\b`));
  for (const index of indexes) {
    if (typeof index === "string") expect(text).toContain(index);
    else expect(text).toMatch(index);
  }
}

const week = 7 * 24 * 3_600_000;

test("listing a destination, newest first, with and without a time range", async ({ pool }) => {
  const destinationId = table.destinationIds[3]!;
  expectIndexOnly(
    await plan(pool, "list destination", searchQuery({ destinationId }, { limit: 51 })),
    /delivery_history_\w+_destination_id_created_at_id_idx/,
  );
  const until = new Date(Date.now() - week / 2);
  const since = new Date(until.getTime() - 3_600_000);
  expectIndexOnly(
    await plan(
      pool,
      "list destination, time range, failed",
      searchQuery({ destinationId, since, until, statuses: ["failed"] }, { limit: 51 }),
    ),
    /delivery_history_\w+_destination_id_created_at_id_idx/,
  );
});

test("listing every destination walks each destination's index", async ({ pool }) => {
  expectIndexOnly(await plan(pool, "list all", searchQuery({}, { limit: 51 })), /delivery_history_\w+_destination_id_created_at_id_idx/);
});

test("finding by userId and messageId goes through the messages' indexes", async ({ pool }) => {
  expectIndexOnly(
    await plan(pool, "list by user", searchQuery({ userId: table.userId }, { limit: 51 })),
    "messages_user_idx",
    /delivery_history_\w+_message_pk_idx/,
  );
  expectIndexOnly(
    await plan(pool, "list by message", searchQuery({ messageId: table.messageId }, { limit: 51 })),
    "messages_source_id_message_id_key",
    /delivery_history_\w+_message_pk_idx/,
  );
});

test("the finish feed reads the newest finishes from its index", async ({ pool }) => {
  const destinationId = table.destinationIds[0]!;
  const snapshot = (await pool.query<{ s: string }>("SELECT pg_current_snapshot()::text AS s")).rows[0]!.s;
  expectIndexOnly(
    await plan(pool, "feed start", feedQuery({ destinationId }, undefined, 100)),
    /delivery_history_\w+_destination_id_finished_xid_idx/,
  );
  expectIndexOnly(
    await plan(pool, "feed next", feedQuery({ destinationId }, { seen: snapshot }, 101)),
    /delivery_history_\w+_destination_id_finished_xid_idx/,
  );
  expectIndexOnly(
    await plan(pool, "feed next, all destinations", feedQuery({}, { seen: snapshot }, 101)),
    /delivery_history_\w+_destination_id_finished_xid_idx/,
  );
});

test("the per-minute series reads 24 hours from the time indexes", async ({ pool }) => {
  const since = new Date(Date.now() - 24 * 3_600_000);
  expectIndexOnly(
    await plan(pool, "stats series", minuteSeriesQuery(table.destinationIds[1]!, since)),
    /delivery_history_\w+_(pkey|destination_id_\w+_idx)/,
    /delivery_attempts_\w+_destination_id_attempted_at_idx/,
  );
});

test("a bulk replay counts, then replays through the destination's creation index", async ({ pool }) => {
  const filter = { destinationId: table.destinationIds[2]!, statuses: ["failed", "expired"] as ("failed" | "expired")[] };
  const cutoff = new Date(Date.now() - week);
  // The count reads every matching row of the destination: either of its indexes will do.
  expectIndexOnly(
    await plan(pool, "replay count", countReplayableQuery(filter, cutoff)),
    /delivery_history_\w+_(pkey|destination_id_\w+_idx)/,
  );
  const replay = { filter, retentionCutoff: cutoff, maxId: String(rows * 2) };
  const middle = { createdAt: new Date(Date.now() - week / 2).toISOString(), id: String(rows / 2) };
  for (const after of [undefined, middle]) {
    const text = await plan(
      pool,
      `replay batch from ${after ? "the middle" : "the start"}`,
      replayBatchQuery(replay, after, new Date(), 1000),
    );
    // The destination's rows only (Postgres sorts the matches when there are
    // few, or walks the index in order when there are many).
    const batch = text.slice(text.indexOf("CTE batch"), text.indexOf("CTE waiting"));
    expectIndexOnly(batch, /(Bitmap Index Scan on|Index Scan using) delivery_history_\w+_(pkey|destination_id_\w+_idx)\b/);
    expect(batch).not.toMatch(/delivery_history_(\d{8}|default)_id_idx/);
    // The replay finds the batch's rows in the history by id (none of them waits in the queue).
    const replayed = text.slice(text.indexOf("CTE waiting"));
    expectIndexOnly(replayed, /Index Scan using delivery_history_(\d{8}|default)_id_idx/);
  }
});
