import { randomUUID } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect as connectNats, type Msg } from "@nats-io/transport-node";
import type pg from "pg";
import { expect } from "vitest";
import { DestinationKind } from "../../../gen/waypost/v1/destination_pb.js";
import { brokerAnswers, testNatsUrl } from "../../helpers/brokers.js";
import { testWith } from "../../helpers/fixtures.js";
import { eventually, type ServiceProcess } from "../../helpers/process.js";
import type { TestServer } from "../../helpers/server.js";
import {
  arrivals,
  callsIn,
  createBatchedWebhook,
  deliveredOnLog,
  onTheLog,
  repeatsAreWholeBatches,
  trackCall,
  workerProcesses,
} from "./log-support.js";

// A worker killed with SIGKILL after its batch reached the destination and
// before its cursor moved: the next holder sends the same batch again, and
// the destination can tell it is a repeat (the same webhook-id, the same
// Nats-Msg-Id). The API server ingests; worker processes deliver.
const test = testWith({ server: { config: { role: "api" } } });
const natsUp = await brokerAnswers("nats", testNatsUrl);
let holding: { release(): Promise<void> } | undefined;
// The lock is let go only once the workers are gone: a worker's record waiting on it must not commit.
const workers = workerProcesses(test, async () => {
  await holding?.release();
});

// Short leases: the survivor takes the cursor over a second after the kill.
const workerEnv = { WAYPOST_LEASE_MS: "1000", WAYPOST_POLL_INTERVAL_MS: "100" };
const total = 200;

/**
 * Holds every cursor's move: a transaction of the test's own locks
 * log_batches against inserts, so a worker's record of a delivered page
 * waits (reads and claims go on). Resolves once a worker's record waits on
 * it, which is after the page was sent and acknowledged.
 */
async function holdRecords(pool: pg.Pool) {
  const locker = await pool.connect();
  await locker.query("BEGIN");
  await locker.query("LOCK TABLE log_batches IN EXCLUSIVE MODE");
  let released = false;
  const held = {
    // The statement's text as pg_stat_activity keeps it (its first 1 kB): the cursor's move opens it.
    recordWaiting: () =>
      eventually(async () => {
        const result = await pool.query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
              AND query LIKE '%UPDATE log_cursors SET seen%'`,
        );
        return result.rowCount! > 0;
      }),
    async release() {
      if (released) return;
      released = true;
      await locker.query("ROLLBACK");
      locker.release();
    },
  };
  holding = held;
  return held;
}

/** Kills the worker while its record waits, and lets the lock go only once the process is gone (its transaction never commits). */
async function killBeforeTheMove(worker: ServiceProcess, held: Awaited<ReturnType<typeof holdRecords>>) {
  await held.recordWaiting();
  worker.child.kill("SIGKILL");
  expect(await worker.exited).toBe("SIGKILL");
  await held.release();
}

async function ingest(server: TestServer, writeKey: string, prefix: string): Promise<string[]> {
  const ids = Array.from({ length: total }, (_, i) => `${prefix}-${i}`);
  await server.tracking(writeKey).batch({ batch: ids.map((id) => trackCall(id)) });
  return ids;
}

test("batched webhook: every call arrives, the repeated batches carry the same webhook-id and calls", async ({ server }) => {
  const receiver = await workers.receiver();
  const source = await server.createSource();
  const destination = await createBatchedWebhook(server, [source.id], receiver.url);
  const first = await workers.start(workerEnv);
  await onTheLog(server.pool, destination.id);
  const held = await holdRecords(server.pool);
  const ids = await ingest(server, source.writeKey, "k");
  // The first worker's page went out whole (4 POSTs of 50) and was answered 200.
  await eventually(async () => arrivals(receiver.requests).size === total);
  await killBeforeTheMove(first, held);
  const sentBeforeKill = receiver.requests.length;
  const cursor = await server.pool.query("SELECT after_id, up_to FROM log_cursors WHERE destination_id = $1", [destination.id]);
  expect(await deliveredOnLog(server.pool, destination.id)).toBe(0);
  expect(cursor.rows[0]).toMatchObject({ after_id: "0", up_to: null });

  await workers.start(workerEnv);
  await eventually(async () => (await deliveredOnLog(server.pool, destination.id)) === total);
  const counts = arrivals(receiver.requests);
  expect([...counts.keys()].sort()).toEqual([...ids].sort());
  // Every call came twice: once before the kill, once in the same batch from the survivor.
  expect(new Set(counts.values())).toEqual(new Set([2]));
  expect(receiver.requests.length).toBe(2 * sentBeforeKill);
  expect(repeatsAreWholeBatches(receiver.requests)).toEqual([]);
  const firstIds = receiver.requests.slice(0, sentBeforeKill).map((r) => r.headers["webhook-id"]);
  const againIds = receiver.requests.slice(sentBeforeKill).map((r) => r.headers["webhook-id"]);
  expect(new Set(againIds)).toEqual(new Set(firstIds));
  expect(callsIn(receiver.requests[0]!).length).toBe(50);
});

test.skipIf(!natsUp)("NATS: every call is in the stream once, the repeats published with the same Nats-Msg-Id", async ({ server }) => {
  const id = randomUUID().slice(0, 8);
  const nc = await connectNats({ servers: new URL(testNatsUrl).host });
  const jsm = await jetstreamManager(nc);
  const stream = `WAYPOST_KILLED_${id}`;
  await jsm.streams.add({ name: stream, subjects: [`waypost-killed-${id}.>`], duplicate_window: 120 * 1_000_000_000 });
  // A core subscription sees every publish, the duplicates the stream drops included.
  const published: string[] = [];
  const subscription = nc.subscribe(`waypost-killed-${id}.>`, {
    callback: (_error: unknown, msg: Msg) => {
      published.push(msg.headers?.get("Nats-Msg-Id") ?? "(none)");
    },
  });
  try {
    const source = await server.createSource();
    const destination = await server.createDestination({
      name: `nats-${id}`,
      sourceIds: [source.id],
      kind: DestinationKind.NATS,
      nats: { servers: [testNatsUrl], subject: `waypost-killed-${id}.{type}` },
    });
    const first = await workers.start(workerEnv);
    await onTheLog(server.pool, destination.id);
    const held = await holdRecords(server.pool);
    const ids = await ingest(server, source.writeKey, "n");
    await eventually(async () => new Set(published).size === total);
    await killBeforeTheMove(first, held);
    expect(await deliveredOnLog(server.pool, destination.id)).toBe(0);

    await workers.start(workerEnv);
    await eventually(async () => (await deliveredOnLog(server.pool, destination.id)) === total);
    await nc.flush();
    const counts = new Map<string, number>();
    for (const msgId of published) counts.set(msgId, (counts.get(msgId) ?? 0) + 1);
    expect([...counts.keys()].sort()).toEqual([...ids].sort());
    expect(new Set(counts.values())).toEqual(new Set([2]));
    // The stream dropped the repeats by Nats-Msg-Id: each call is in it once.
    const info = await jsm.streams.info(stream);
    expect(info.state.messages).toBe(total);
  } finally {
    subscription.unsubscribe();
    await jsm.streams.delete(stream).catch(() => {});
    await nc.close();
  }
});
