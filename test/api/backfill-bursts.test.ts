import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { expect } from "vitest";
import { JobState } from "../../gen/waypost/v1/job_pb.js";
import type { Pool } from "../../src/db/pool.js";
import { testWith } from "../helpers/fixtures.js";
import { eventually } from "../helpers/process.js";
import type { Receiver } from "../helpers/receiver.js";
import type { TestServer } from "../helpers/server.js";

// Many backfills at once: a burst on one destination makes one job, and
// one destination's long backfill does not hold up another's. A test holds
// a backfill "long" by holding the per-destination lock its pages take.
const test = testWith({ database: { max: 4 } });

/** A source with `count` calls and a disabled destination of them. */
async function setUp(server: TestServer, receiver: Receiver, count: number, name = "crm") {
  const source = await server.createSource();
  const tracking = server.tracking(source.writeKey);
  const since = new Date(Date.now() - 60_000);
  for (let i = 0; i < count; i++) await tracking.track({ track: { userId: `u${i}`, event: "Order Completed" } });
  const destination = await server.createDestination({ name, sourceIds: [source.id], webhooks: [{ url: receiver.url }], enabled: false });
  return { destinationId: destination.id, since };
}

const queued = async (server: TestServer, destinationId: string) =>
  Number((await server.pool.query("SELECT count(*) FROM delivery_queue WHERE destination_id = $1", [destinationId])).rows[0].count);

const waitingLocks = async (locker: Pool) =>
  Number(
    (
      await locker.query(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
      )
    ).rows[0].count,
  );

/** Holds the destination's backfill lock on a connection of its own, as a long page would. */
async function holdBackfills(locker: Pool, destinationId: string) {
  const client = await locker.connect();
  await client.query("SELECT pg_advisory_lock(hashtext('waypost-backfill:' || $1::text))", [destinationId]);
  return {
    async release() {
      await client.query("SELECT pg_advisory_unlock(hashtext('waypost-backfill:' || $1::text))", [destinationId]);
      client.release();
    },
  };
}

test("100 BackfillDestination calls at once on one destination make one job; the others are told it is already running", async ({
  server,
  receiver,
  pool: locker,
}) => {
  const { destinationId, since } = await setUp(server, receiver, 3);
  const held = await holdBackfills(locker, destinationId);
  const responses = await Promise.all(
    Array.from({ length: 100 }, () => server.destinations.backfillDestination({ destinationId, since: timestampFromDate(since) })),
  );
  const ids = new Set(responses.map((r) => r.backfill!.id));
  expect(ids.size).toBe(1);
  expect(responses.filter((r) => !r.alreadyRunning)).toHaveLength(1);
  expect(responses.every((r) => r.backfill!.state === JobState.RUNNING)).toBe(true);
  expect((await server.destinations.listBackfills({ destinationId })).backfills).toHaveLength(1);

  await held.release();
  await server.waypost.jobs!.idle();
  const { backfill } = await server.destinations.getBackfill({ id: [...ids][0]! });
  expect(backfill).toMatchObject({ state: JobState.DONE, created: 3n });
  expect(await queued(server, destinationId)).toBe(3);
});

test("a range the running backfill does not cover, or settings changed since it was asked for, start another", async ({
  server,
  receiver,
  pool: locker,
}) => {
  const { destinationId, since } = await setUp(server, receiver, 2);
  const held = await holdBackfills(locker, destinationId);
  const first = await server.destinations.backfillDestination({ destinationId, since: timestampFromDate(since) });
  // Inside its range (a later since, an earlier until): the running one.
  const inside = await server.destinations.backfillDestination({
    destinationId,
    since: timestampFromDate(new Date(since.getTime() + 1_000)),
    until: timestampFromDate(new Date()),
  });
  expect(inside).toMatchObject({ alreadyRunning: true, backfill: { id: first.backfill!.id } });
  // Starting earlier: not covered.
  const earlier = await server.destinations.backfillDestination({
    destinationId,
    since: timestampFromDate(new Date(since.getTime() - 3_600_000)),
  });
  expect(earlier.alreadyRunning).toBe(false);
  expect(earlier.backfill!.id).not.toBe(first.backfill!.id);
  // The destination's rules changed: the running one applies them only to the pages it has left.
  await server.destinations.updateDestination({
    destination: { id: destinationId, filter: { event: "Order Completed" } },
    updateMask: { paths: ["filter"] },
  });
  const changed = await server.destinations.backfillDestination({ destinationId, since: timestampFromDate(since) });
  expect(changed.alreadyRunning).toBe(false);
  expect(new Set([first, earlier, changed].map((r) => r.backfill!.id)).size).toBe(3);
  await held.release();
  await server.waypost.jobs!.idle();
  expect(await queued(server, destinationId)).toBe(2);
});

test("another destination's backfill runs to its end while one destination's backfills are held up", async ({
  server,
  receiver,
  pool: locker,
}) => {
  const a = await setUp(server, receiver, 3, "busy");
  const b = await setUp(server, receiver, 2, "quiet");
  const held = await holdBackfills(locker, a.destinationId);
  // Three backfills of the busy destination that do not cover each other, asked for first.
  for (const hours of [0, 1, 2]) {
    const since = timestampFromDate(new Date(a.since.getTime() - hours * 3_600_000));
    expect((await server.destinations.backfillDestination({ destinationId: a.destinationId, since })).alreadyRunning).toBe(false);
  }
  // One of them holds a lane, its page waiting for the lock.
  await eventually(async () => (await waitingLocks(locker)) > 0);
  const { backfill } = await server.destinations.backfillDestination({ destinationId: b.destinationId, since: timestampFromDate(b.since) });
  const done = await eventually(async () => {
    const current = (await server.destinations.getBackfill({ id: backfill!.id })).backfill!;
    return current.state === JobState.DONE && current;
  }, 90_000);
  expect(done.created).toBe(2n);
  expect(await queued(server, b.destinationId)).toBe(2);
  // The busy destination's backfills are still where the lock holds them.
  const busy = (await server.destinations.listBackfills({ destinationId: a.destinationId })).backfills;
  expect(busy.map((job) => job.state)).toEqual([JobState.RUNNING, JobState.RUNNING, JobState.RUNNING]);
  // Never two of its jobs at once: one page waits for the lock, the others wait for their turn.
  expect(await waitingLocks(locker)).toBe(1);

  await held.release();
  await server.waypost.jobs!.idle();
  const ended = (await server.destinations.listBackfills({ destinationId: a.destinationId })).backfills;
  expect(ended.map((job) => job.state)).toEqual([JobState.DONE, JobState.DONE, JobState.DONE]);
  expect(await queued(server, a.destinationId)).toBe(3);
});
