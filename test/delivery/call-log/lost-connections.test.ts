import { expect } from "vitest";
import { moveOntoLog } from "../../../src/db/call-log/log-cursors.js";
import { testWith } from "../../helpers/fixtures.js";
import { eventually, type ServiceProcess } from "../../helpers/process.js";
import {
  arrivals,
  backendsOf,
  createBatchedWebhook,
  deliveredOnLog,
  repeatsAreWholeBatches,
  trackCall,
  workerProcesses,
} from "./log-support.js";

// Every connection of the worker process terminated by Postgres (as a
// restart or an operator's pg_terminate_backend does) again and again during
// a burn-down: no call is lost, and a repeat is a whole batch sent again.
const test = testWith({ server: { config: { role: "api" } } });
const workers = workerProcesses(test);

const total = 6_000;
const batchCalls = 100;
/**
 * At these POSTs the worker's connections are terminated while the POST
 * waits for its answer. All below 60 (the batches without a repeat): a
 * termination need not cause a repeat (the page's record may be written
 * on a connection opened after it), so later POSTs may never come.
 */
const terminateAt = new Set([7, 25, 43, 57]);

test("a burn-down whose worker loses every database connection again and again delivers every call", async ({ server }) => {
  let worker: ServiceProcess | undefined;
  const terminated: number[] = [];
  // The receiver holds those POSTs until the worker's backends are gone: the page is out, its record not yet written.
  const receiver = await workers.receiver((_request, index) => {
    if (!terminateAt.has(index)) return { status: 200 };
    const after = backendsOf(server.pool, worker!.child.pid!).then(async (pids) => {
      terminated.push(pids.length);
      await server.pool.query("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", [pids]);
    });
    return { status: 200, after };
  });
  const source = await server.createSource();
  const destination = await createBatchedWebhook(server, [source.id], receiver.url, batchCalls);
  await moveOntoLog(server.pool, [destination.id], new Date());
  const client = server.tracking(source.writeKey);
  const ids: string[] = [];
  for (let chunk = 0; chunk < total / 500; chunk++) {
    const batch = Array.from({ length: 500 }, (_, i) => `c-${chunk}-${i}`);
    ids.push(...batch);
    await client.batch({ batch: batch.map((id) => trackCall(id)) });
  }

  // A short lease: a cursor whose holder lost track of it is free again within a second.
  worker = await workers.start({ WAYPOST_LEASE_MS: "1000", WAYPOST_POLL_INTERVAL_MS: "100" });
  await eventually(async () => (await deliveredOnLog(server.pool, destination.id)) >= total, 60_000);

  expect(worker.child.exitCode).toBeNull();
  expect(terminated.length).toBe(terminateAt.size);
  // A termination can find the worker between connections (its pool still opening new ones after the last): most find some.
  expect(terminated.filter((n) => n > 0).length, `backends found at each termination: ${terminated.join(", ")}`).toBeGreaterThanOrEqual(
    terminateAt.size / 2,
  );
  const counts = arrivals(receiver.requests);
  expect([...counts.keys()].sort()).toEqual([...ids].sort());
  expect(repeatsAreWholeBatches(receiver.requests)).toEqual([]);
  // Pages whose record the terminations cut off were sent again (each a whole repeat, checked above).
  expect(receiver.requests.length).toBeGreaterThan(total / batchCalls);
  // The log says each call was delivered once: the batches recorded cover every call, none twice.
  const recorded = await server.pool.query<{ calls: number; delivered: number }>(
    "SELECT sum(calls)::int AS calls, sum(delivered)::int AS delivered FROM log_batches WHERE destination_id = $1",
    [destination.id],
  );
  expect(recorded.rows[0]).toEqual({ calls: total, delivered: total });
  const exceptions = await server.pool.query("SELECT count(*)::int AS n FROM deliveries WHERE destination_id = $1", [destination.id]);
  expect(exceptions.rows[0].n).toBe(0);
});
