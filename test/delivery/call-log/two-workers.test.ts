import { expect } from "vitest";
import { moveOntoLog } from "../../../src/db/call-log/log-cursors.js";
import { testWith } from "../../helpers/fixtures.js";
import { eventually, type ServiceProcess } from "../../helpers/process.js";
import type { Receiver } from "../../helpers/receiver.js";
import type { TestServer } from "../../helpers/server.js";
import {
  arrivals,
  batchesPerCall,
  callsIn,
  createBatchedWebhook,
  deliveredOnLog,
  localPortsOf,
  repeatsAreWholeBatches,
  trackCall,
  workerProcesses,
} from "./log-support.js";

// Two worker processes over the cursors of one destination (one per
// source): a cursor is worked by one process at a time, so no call is sent
// twice, while the other process works the other cursor.
const test = testWith({ server: { config: { role: "api" } } });
const workers = workerProcesses(test);

const workerEnv = { WAYPOST_POLL_INTERVAL_MS: "50" };

async function twoSources(server: TestServer, receiver: Receiver) {
  const [a, b] = [await server.createSource(), await server.createSource()];
  const destination = await createBatchedWebhook(server, [a.id, b.id], receiver.url);
  await moveOntoLog(server.pool, [destination.id], new Date());
  const send = (writeKey: string, ids: string[]) => server.tracking(writeKey).batch({ batch: ids.map((id) => trackCall(id)) });
  return { a, b, destination, send };
}

const named = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

test("while one process's POST of a cursor is open, the cursor stays leased and no process sends its later calls", async ({ server }) => {
  let release: () => void = () => {};
  const answered = new Promise<void>((resolve) => (release = resolve));
  const receiver = await workers.receiver((request) =>
    callsIn(request).some((c) => c.messageId === "a1-0") ? { status: 200, after: answered } : { status: 200 },
  );
  const { a, b, destination, send } = await twoSources(server, receiver);
  await workers.start(workerEnv);
  await workers.start(workerEnv);
  await send(a.writeKey, named("a1", 10));
  await receiver.waitForRequests(1);
  const lease = await server.pool.query(
    "SELECT holder IS NOT NULL AND held_until > now() AS held FROM log_cursors WHERE destination_id = $1 AND source_id = $2",
    [destination.id, a.id],
  );
  expect(lease.rows[0].held).toBe(true);
  // Later calls of the held source, then calls of the other: by the time the
  // other's arrive, both processes have claimed since the held source had more.
  await send(a.writeKey, named("a2", 10));
  await send(b.writeKey, named("b1", 10));
  await eventually(async () => (arrivals(receiver.requests).get("b1-9") ?? 0) > 0);
  expect([...arrivals(receiver.requests).keys()].filter((id) => id.startsWith("a2-"))).toEqual([]);
  release();
  await eventually(async () => (await deliveredOnLog(server.pool, destination.id)) === 30);
  const counts = arrivals(receiver.requests);
  expect(counts.size).toBe(30);
  expect([...counts.values()].every((n) => n === 1)).toBe(true);
});

test("two processes burning down two cursors under ingest send every call once", { timeout: 120_000 }, async ({ server }) => {
  // Which process sent each POST: the one whose connection to the receiver has the request's port.
  const processes: ServiceProcess[] = [];
  const senders: number[] = [];
  const receiver = await workers.receiver((request) => {
    const port = Number(new URL(receiver.url).port);
    senders.push(processes.findIndex((p) => localPortsOf(p.child.pid!, port).includes(request.remotePort!)));
    return { status: 200 };
  });
  const { a, b, destination, send } = await twoSources(server, receiver);
  processes.push(await workers.start(workerEnv), await workers.start(workerEnv));
  const perSource = 3_000;
  const ids: string[] = [];
  // Both sources' calls in chunks of 100, stored while the workers deliver.
  for (let chunk = 0; chunk < perSource / 100; chunk++) {
    const [forA, forB] = [named(`a-${chunk}`, 100), named(`b-${chunk}`, 100)];
    ids.push(...forA, ...forB);
    await Promise.all([send(a.writeKey, forA), send(b.writeKey, forB)]);
  }
  await eventually(async () => (await deliveredOnLog(server.pool, destination.id)) >= 2 * perSource, 90_000);

  const counts = arrivals(receiver.requests);
  expect([...counts.keys()].sort()).toEqual([...ids].sort());
  const twice = [...counts].filter(([, n]) => n !== 1);
  expect(twice).toEqual([]);
  expect(repeatsAreWholeBatches(receiver.requests)).toEqual([]);
  // In the database too: each call is covered by exactly one delivered batch.
  const covered = await batchesPerCall(server.pool, destination.id);
  expect(covered.size).toBe(2 * perSource);
  expect([...covered].filter(([, n]) => n !== 1)).toEqual([]);
  // Both processes took part, and every POST came from one of them.
  expect(new Set(senders)).toEqual(new Set([0, 1]));
});
