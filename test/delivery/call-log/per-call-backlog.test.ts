import { performance } from "node:perf_hooks";
import { expect } from "vitest";
import type { Queryable } from "../../../src/db/pool.js";
import { testWith } from "../../helpers/fixtures.js";
import { eventually } from "../../helpers/process.js";
import { startReceiver, type Receiver } from "../../helpers/receiver.js";
import { startTestServer } from "../../helpers/server.js";
import { arrivals, callsIn, createBatchedWebhook, trackCall } from "./log-support.js";

// A database from before the log: a batched webhook with 100,000 calls
// queued per call. A server started with the log on moves the destination
// onto it while calls keep coming in: the backlog is delivered per call,
// the calls stored since by the cursor, each call exactly once. The file's
// own server (the API) ingests; the second server delivers.
// The file's server is per call whichever layout the suite runs: the database must be one from before the log.
const test = testWith({ server: { config: { role: "api", delivery: { callLog: false } } } });
const receivers: Receiver[] = [];
test.afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

interface QueueModule {
  queueDeliveries(pool: Queryable, options: { sourceId: string; destinationId: string; count: number; prefix?: string }): Promise<void>;
}
const queueModule = new URL("../../../bench/lib/queue.mjs", import.meta.url).href;
const backlog = 100_000;

test("100,000 calls queued per call and calls ingested during the move each arrive once", { timeout: 120_000 }, async ({ server }) => {
  // Calls counted as they arrive: parsing every body again at each poll would cost more than the delivery.
  let received = 0;
  const receiver = await startReceiver({
    respond: (request) => {
      received += callsIn(request).length;
      return { status: 200 };
    },
  });
  receivers.push(receiver);
  const source = await server.createSource();
  const destination = await createBatchedWebhook(server, [source.id], receiver.url, 500, {
    webhooks: [{ url: receiver.url, batch: { maxCalls: 500, maxWaitMs: 100 } }],
  });
  const { queueDeliveries } = (await import(queueModule)) as QueueModule;
  await queueDeliveries(server.pool, { sourceId: source.id, destinationId: destination.id, count: backlog, prefix: "q" });

  // Calls keep coming in, before, during and after the move, until a few
  // batches were stored with the destination on the log.
  const client = server.tracking(source.writeKey);
  const live: string[] = [];
  let afterMove = 0;
  const layout = async () =>
    (await server.pool.query("SELECT delivery_layout FROM destinations WHERE id = $1", [destination.id])).rows[0].delivery_layout;
  const ingest = (async () => {
    for (let n = 0; afterMove < 5; n++) {
      const moved = (await layout()) === "log";
      const ids = Array.from({ length: 20 }, (_, i) => `live-${n}-${i}`);
      await client.batch({ batch: ids.map((id) => trackCall(id)) });
      live.push(...ids);
      if (moved) afterMove++;
    }
  })();

  const started = performance.now();
  const delivering = await startTestServer({
    database: server.database,
    config: { role: "worker", delivery: { callLog: true, pollIntervalMs: 100, perDestinationConcurrency: 2_000 } },
  });
  try {
    await ingest;
    const expected = backlog + live.length;
    await eventually(async () => received >= expected, 100_000);
    await delivering.waypost.delivery!.settle();
    const elapsed = performance.now() - started;

    const counts = arrivals(receiver.requests);
    expect(counts.size).toBe(expected);
    expect([...counts].filter(([, n]) => n !== 1)).toEqual([]);
    for (const id of ["q-0", `q-${backlog - 1}`, ...live]) expect(counts.get(id)).toBe(1);
    // The move happened while calls came in: some were routed per call, later ones read by the cursor.
    const routes = await server.pool.query<{ per_call: number; on_log: number }>(
      `SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM deliveries d WHERE d.destination_id = $1 AND d.message_pk = m.id))::int AS per_call,
              (SELECT coalesce(sum(delivered), 0) FROM log_batches WHERE destination_id = $1)::int AS on_log
         FROM messages m WHERE m.message_id LIKE 'live-%'`,
      [destination.id],
    );
    expect(routes.rows[0]!.per_call).toBeGreaterThan(0);
    expect(routes.rows[0]!.on_log).toBeGreaterThan(0);
    expect(routes.rows[0]!.per_call + routes.rows[0]!.on_log).toBe(live.length);
    const undelivered = await server.pool.query(
      "SELECT count(*)::int AS n FROM deliveries WHERE destination_id = $1 AND status <> 'delivered'",
      [destination.id],
    );
    expect(undelivered.rows[0].n).toBe(0);
    console.log(`per-call backlog of ${backlog} and ${live.length} live calls delivered in ${Math.round(elapsed)} ms`);
  } finally {
    await delivering.stop();
  }
});
