// The log scenarios' bare reference (bench/bare-log-loader.mjs) reads calls
// past a cursor with the bench's own SQL, delivers them and records the
// batches itself: run against a migrated database (and the machine's
// RabbitMQ and NATS), every stored call must reach its target exactly once,
// none past a transaction still running, and the recorded batches must tile
// the source's positions from the cursor's start to its last call, so a
// loader that skips or repeats a call, or a schema change that breaks its
// SQL, fails here rather than in a bench run.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "vitest";
import type { Pool, Queryable } from "../../src/db/pool.js";
import { createWarehouseLoader } from "../../src/warehouse/loader.js";
import { brokerAnswers, testAmqpUrl, testNatsUrl, withAmqpExchange, withNatsStream } from "../helpers/brokers.js";
import { testWith } from "../helpers/fixtures.js";
import { eventually } from "../helpers/process.js";

// bench/ is plain JavaScript (type-checked by bench/tsconfig.json); the imports are typed here.
interface QueueModule {
  storeCalls(pool: Queryable, options: { sourceId: string; count: number; prefix?: string; analyze?: boolean }): Promise<void>;
  addBareDestination(pool: Queryable, options: { id: string; name: string; layout?: "per_call" | "log" }): Promise<void>;
  addBareLogCursor(pool: Queryable, options: { destinationId: string; sourceId: string }): Promise<void>;
}
type LogKind = "warehouse" | "amqp" | "nats" | "batched-webhooks";
interface BareLogLoaderModule {
  bareLogLoader(options: {
    kind: LogKind;
    url: string;
    sourceId: string;
    destinationId: string;
    count: number;
    target: string;
    batch?: number;
    inflight?: number;
    idleMs?: number;
  }): Promise<{ calls: number; batches: number; rows_in_warehouse?: Record<string, number> }>;
}
interface BareInsertBodies {
  trackBody(messageId: string, i: number): string;
}
const bench = (file: string) => new URL(`../../bench/${file}`, import.meta.url).href;
const [amqpUp, natsUp] = await Promise.all([brokerAnswers("amqp", testAmqpUrl), brokerAnswers("nats", testNatsUrl)]);

const test = testWith({ database: { max: 4 } });
let lane = 0;

/** A source and a bare destination on the log with its cursor, ready before any call is stored. */
async function logLane(pool: Pool, kind: LogKind) {
  const { addBareDestination, addBareLogCursor } = (await import(bench("lib/queue.mjs"))) as QueueModule;
  lane++;
  const sourceId = `00000000-0000-4000-8000-0000000001${String(lane).padStart(2, "0")}`;
  const destinationId = `00000000-0000-4000-8000-0000000002${String(lane).padStart(2, "0")}`;
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, $2, $3)", [sourceId, `log-${kind}`, `k${lane}`]);
  await addBareDestination(pool, { id: destinationId, name: `bare-log-${kind}`, layout: "log" });
  await addBareLogCursor(pool, { destinationId, sourceId });
  const { rows } = await pool.query<{ xid: string; id: string }>(
    "SELECT after_xid::text AS xid, after_id::text AS id FROM log_cursors WHERE destination_id = $1",
    [destinationId],
  );
  return { sourceId, destinationId, start: rows[0]! };
}

/** The recorded batches tile (cursor start, the source's last position] without a gap or an overlap, and the cursor is at its end. */
async function expectBatchesTile(pool: Pool, log: { sourceId: string; destinationId: string; start: { xid: string; id: string } }) {
  const { rows: batches } = await pool.query<{ from: string; to: string; calls: number; delivered: number; inRange: number }>(
    `SELECT b.from_xid::text || '/' || b.from_id AS from, b.to_xid::text || '/' || b.to_id AS to, b.calls, b.delivered,
            (SELECT count(*)::int FROM messages m WHERE m.source_id = b.source_id
                AND (m.log_xid, m.id) > (b.from_xid, b.from_id) AND (m.log_xid, m.id) <= (b.to_xid, b.to_id)) AS "inRange"
       FROM log_batches b WHERE b.destination_id = $1 ORDER BY b.to_xid, b.to_id`,
    [log.destinationId],
  );
  const { rows } = await pool.query<{ last: string; cursor: string }>(
    `SELECT (SELECT log_xid::text || '/' || id FROM messages WHERE source_id = $1 ORDER BY log_xid DESC, id DESC LIMIT 1) AS last,
            (SELECT after_xid::text || '/' || after_id FROM log_cursors WHERE destination_id = $2) AS cursor`,
    [log.sourceId, log.destinationId],
  );
  expect(batches.length).toBeGreaterThan(1);
  expect(batches[0]!.from).toBe(`${log.start.xid}/${log.start.id}`);
  batches.forEach((batch, i) => {
    if (i > 0) expect(batch.from).toBe(batches[i - 1]!.to);
    expect(batch).toMatchObject({ calls: batch.inRange, delivered: batch.inRange });
  });
  expect(batches.at(-1)!.to).toBe(rows[0]!.last);
  expect(rows[0]!.cursor).toBe(rows[0]!.last);
}

test("batched-webhooks: every call POSTed once, none read past a transaction still running, the batches tile the log", async ({
  pool,
  database,
}) => {
  const { storeCalls } = (await import(bench("lib/queue.mjs"))) as QueueModule;
  const { bareLogLoader } = (await import(bench("bare-log-loader.mjs"))) as BareLogLoaderModule;
  const log = await logLane(pool, "batched-webhooks");
  /** Every messageId the sink received, in arrival order (a repeat stays in). */
  const received: string[] = [];
  const sink = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      for (const call of JSON.parse(body).batch as Array<{ messageId: string }>) received.push(call.messageId);
      res.end("ok");
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
  // Three committed transactions, then one left open while a later one commits: the later one's calls have
  // positions past the open one's, so the loader must wait for it rather than read past it.
  for (const prefix of ["a", "b", "c"]) await storeCalls(pool, { sourceId: log.sourceId, count: 70, prefix });
  const open = await pool.connect();
  let committed = false;
  try {
    await open.query("BEGIN");
    await storeCalls(open, { sourceId: log.sourceId, count: 40, prefix: "late", analyze: false });
    await storeCalls(pool, { sourceId: log.sourceId, count: 50, prefix: "after" });
    const { port } = sink.address() as AddressInfo;
    const loading = bareLogLoader({
      kind: "batched-webhooks",
      url: database.url,
      sourceId: log.sourceId,
      destinationId: log.destinationId,
      count: 300,
      target: `http://127.0.0.1:${port}`,
      batch: 30,
      inflight: 3,
      idleMs: 20_000,
    });
    const recorded = async () =>
      (
        await pool.query<{ n: number }>("SELECT coalesce(sum(calls), 0)::int AS n FROM log_batches WHERE destination_id = $1", [
          log.destinationId,
        ])
      ).rows[0]!.n;
    // Everything below the open transaction, and nothing past it.
    expect(await eventually(async () => ((await recorded()) >= 210 ? recorded() : undefined))).toBe(210);
    expect(received.filter((id) => id.startsWith("after-") || id.startsWith("late-"))).toEqual([]);
    await open.query("COMMIT");
    committed = true;
    const result = await loading;
    expect(result.calls).toBe(300);
  } finally {
    // A connection still in the open transaction is closed, not handed to the next test.
    open.release(!committed);
    sink.closeAllConnections();
    await new Promise((resolve) => sink.close(resolve));
  }
  const expected = [
    ...["a", "b", "c", "after"].flatMap((prefix) => Array.from({ length: prefix === "after" ? 50 : 70 }, (_, n) => `${prefix}-${n}`)),
    ...Array.from({ length: 40 }, (_, n) => `late-${n}`),
  ];
  expect([...received].sort()).toEqual(expected.sort());
  await expectBatchesTile(pool, log);
});

test("warehouse: every call loaded once into tables like the loader's, the batches tile the log", async ({ pool, database }) => {
  const { storeCalls } = (await import(bench("lib/queue.mjs"))) as QueueModule;
  const { bareLogLoader } = (await import(bench("bare-log-loader.mjs"))) as BareLogLoaderModule;
  const { trackBody } = (await import(bench("bare-insert.mjs"))) as BareInsertBodies;
  // The service's loader makes waypost.tracks and waypost.order_completed (here in the test database itself) from one call.
  const loader = createWarehouseLoader({ url: database.url, schema: "waypost" });
  try {
    expect(await loader.load([{ payload: trackBody("loader-1", 1), receivedAt: new Date() }])).toEqual([{ outcome: "success" }]);
  } finally {
    await loader.close();
  }
  const log = await logLane(pool, "warehouse");
  for (const prefix of ["a", "b"]) await storeCalls(pool, { sourceId: log.sourceId, count: 125, prefix });
  const result = await bareLogLoader({
    kind: "warehouse",
    url: database.url,
    sourceId: log.sourceId,
    destinationId: log.destinationId,
    count: 250,
    target: database.url,
    batch: 100,
  });
  expect(result).toMatchObject({ calls: 250, rows_in_warehouse: { tracks: 250, order_completed: 250 } });
  await expectBatchesTile(pool, log);
});

test.for([
  ["amqp", amqpUp, withAmqpExchange],
  ["nats", natsUp, withNatsStream],
] as const)("%s: every call published once, the batches tile the log", async ([kind, up, withTarget], { pool, database, skip }) => {
  if (!up) return skip();
  const { storeCalls } = (await import(bench("lib/queue.mjs"))) as QueueModule;
  const { bareLogLoader } = (await import(bench("bare-log-loader.mjs"))) as BareLogLoaderModule;
  await withTarget(async (tag, stored) => {
    const log = await logLane(pool, kind);
    for (const prefix of ["a", "b"]) await storeCalls(pool, { sourceId: log.sourceId, count: 60, prefix });
    const options = {
      kind,
      url: database.url,
      sourceId: log.sourceId,
      destinationId: log.destinationId,
      count: 120,
      target: tag,
      batch: 50,
    };
    expect(await bareLogLoader(options)).toMatchObject({ calls: 120 });
    // An AMQP queue counts a repeated publish; JetStream drops a repeated msgID, and the batches' tiling catches it.
    expect(await stored()).toBe(120);
    await expectBatchesTile(pool, log);
  });
});
