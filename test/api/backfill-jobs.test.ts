import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { JobState } from "../../gen/waypost/v1/job_pb.js";
import type { Pool } from "../../src/db/pool.js";
import { testWith } from "../helpers/fixtures.js";
import { eventually } from "../helpers/process.js";
import type { Receiver } from "../helpers/receiver.js";
import type { TestServer } from "../helpers/server.js";

// Backfills are jobs in Postgres: their counts say what they did, they can
// be cancelled, and one whose destination is deleted stops without leaving
// deliveries behind. A test pauses a job between pages by holding the
// per-destination backfill lock its pages take.
const test = testWith({ database: { max: 2 } });

const error = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );

/** A source with `count` calls, totals 1..count, and a disabled destination whose filter passes totals above `above`. */
async function setUp(server: TestServer, receiver: Receiver, count: number, above: number) {
  const source = await server.createSource();
  const tracking = server.tracking(source.writeKey);
  const since = new Date(Date.now() - 60_000);
  for (let total = 1; total <= count; total++) {
    await tracking.track({ track: { userId: `u${total % 3}`, event: "Order Completed", properties: { total } } });
  }
  const destination = await server.createDestination({
    name: "crm",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    enabled: false,
    filter: { "properties.total": { $gt: above } },
  });
  return { destinationId: destination.id, since: timestampFromDate(since) };
}

const queued = async (server: TestServer, destinationId: string) =>
  Number((await server.pool.query("SELECT count(*) FROM delivery_queue WHERE destination_id = $1", [destinationId])).rows[0].count);

/** Holds the destination's backfill lock on a connection of its own; resolves once a backfill page waits for it. */
async function pauseBackfills(locker: Pool, destinationId: string) {
  const client = await locker.connect();
  await client.query("SELECT pg_advisory_lock(hashtext('waypost-backfill:' || $1::text))", [destinationId]);
  return {
    waiting: () =>
      eventually(
        async () =>
          Number(
            (
              await locker.query(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
              )
            ).rows[0].count,
          ) > 0,
      ),
    async release() {
      await client.query("SELECT pg_advisory_unlock(hashtext('waypost-backfill:' || $1::text))", [destinationId]);
      client.release();
    },
  };
}

test("the counts are what the backfill did: candidates, created, and those the filter turned away", async ({ server, receiver }) => {
  const { destinationId, since } = await setUp(server, receiver, 6, 2);
  const { backfill } = await server.destinations.backfillDestination({ destinationId, since });
  expect(backfill).toMatchObject({ destinationId, state: JobState.RUNNING, candidates: 6n, created: 0n, filtered: 0n });
  expect(backfill!.since).toEqual(since);
  await server.waypost.jobs!.idle();
  const { backfill: done } = await server.destinations.getBackfill({ id: backfill!.id });
  expect(done).toMatchObject({ state: JobState.DONE, candidates: 6n, created: 4n, filtered: 2n, error: "" });
  expect(done!.finishTime).toBeDefined();
  expect(await queued(server, destinationId)).toBe(4);

  // Again: nothing left to create, the two turned away again; listed newest first.
  const again = await server.destinations.backfillDestination({ destinationId, since });
  expect(again.backfill!.candidates).toBe(2n);
  await server.waypost.jobs!.idle();
  const { backfills } = await server.destinations.listBackfills({ destinationId });
  expect(backfills.map((b) => [b.id, b.state, b.created, b.filtered])).toEqual([
    [again.backfill!.id, JobState.DONE, 0n, 2n],
    [backfill!.id, JobState.DONE, 4n, 2n],
  ]);
  expect(await queued(server, destinationId)).toBe(4);
});

test("CancelBackfill stops it before its next page", async ({ server, receiver, pool: locker }) => {
  const { destinationId, since } = await setUp(server, receiver, 3, 0);
  const pause = await pauseBackfills(locker, destinationId);
  const { backfill } = await server.destinations.backfillDestination({ destinationId, since });
  await pause.waiting();
  const { backfill: cancelled } = await server.destinations.cancelBackfill({ id: backfill!.id });
  expect(cancelled).toMatchObject({ id: backfill!.id, state: JobState.CANCELLED, error: "cancelled on request" });
  await pause.release();
  await server.waypost.jobs!.idle();
  expect(await queued(server, destinationId)).toBe(0);
  expect((await server.destinations.getBackfill({ id: backfill!.id })).backfill).toMatchObject({ state: JobState.CANCELLED, created: 0n });
  // Cancelling an ended backfill changes nothing.
  expect((await server.destinations.cancelBackfill({ id: backfill!.id })).backfill!.state).toBe(JobState.CANCELLED);
});

test("a backfill whose destination is deleted meanwhile stops, leaving no queued deliveries behind", async ({
  server,
  receiver,
  pool: locker,
}) => {
  const { destinationId, since } = await setUp(server, receiver, 3, 0);
  const pause = await pauseBackfills(locker, destinationId);
  const { backfill } = await server.destinations.backfillDestination({ destinationId, since });
  await pause.waiting();
  await server.destinations.deleteDestination({ id: destinationId });
  await pause.release();
  await server.waypost.jobs!.idle();
  expect(await queued(server, destinationId)).toBe(0);
  expect((await server.destinations.getBackfill({ id: backfill!.id })).backfill).toMatchObject({
    state: JobState.CANCELLED,
    created: 0n,
    error: "the destination was deleted",
  });
});

test("refuses bad ids and ranges, and unknown backfills", async ({ server, receiver }) => {
  expect((await error(server.destinations.getBackfill({ id: "x" })))?.code).toBe(Code.InvalidArgument);
  const missing = await error(server.destinations.getBackfill({ id: "00000000-0000-4000-8000-000000000999" }));
  expect(missing?.code).toBe(Code.NotFound);
  expect((await error(server.destinations.cancelBackfill({ id: "00000000-0000-4000-8000-000000000999" })))?.code).toBe(Code.NotFound);
  expect((await error(server.destinations.listBackfills({ destinationId: "" })))?.code).toBe(Code.InvalidArgument);
  const { destinationId, since } = await setUp(server, receiver, 1, 0);
  const tooMany = await error(server.destinations.listBackfills({ destinationId, pageSize: 101 }));
  expect(tooMany?.rawMessage).toBe("pageSize: must be 0 to 100 (0: 20)");
  const backwards = await error(server.destinations.backfillDestination({ destinationId, since, until: since }));
  expect(backwards?.rawMessage).toBe("until: must be after since");
});
