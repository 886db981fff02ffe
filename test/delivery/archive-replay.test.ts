import { randomUUID } from "node:crypto";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { DestinationKind } from "../../gen/waypost/v1/destination_pb.js";
import { JobState } from "../../gen/waypost/v1/job_pb.js";
import { singleNodeJobTable } from "../../src/db/job-table/index.js";
import { withTransaction } from "../../src/db/pool.js";
import { insertJob, type JobRow } from "../../src/db/queries/background-jobs.js";
import { createBackfillJob } from "../../src/delivery/backfill-job.js";
import { testWith } from "../helpers/fixtures.js";
import { eventually } from "../helpers/process.js";
import type { Receiver } from "../helpers/receiver.js";
import type { TestServer } from "../helpers/server.js";

// Replays from a lake's archive: calls Postgres no longer has are read from
// the archive's files and sent through a destination's rules as they are now,
// each once per backfill.
const test = testWith({ server: { config: { delivery: { pollIntervalMs: 100 } } } });
const scratch = mkdtempSync(path.join(tmpdir(), "waypost-archive-replay-"));
test.afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const ids = ["r-0", "r-1", "r-2", "r-3", "r-4"];

/** An archive lake in a directory and a webhook on one source; the calls archived, delivered, then gone from Postgres. */
async function archivedAndForgotten(server: TestServer, receiver: Receiver) {
  const directory = mkdtempSync(path.join(scratch, "lake-"));
  // The receiver is the file's: requests of earlier tests are counted from.
  const base = receiver.requests.length;
  const source = await server.createSource();
  const archive = await server.createDestination({
    name: "archive",
    sourceIds: [source.id],
    kind: DestinationKind.LAKE,
    lake: { url: pathToFileURL(directory).href, flushSeconds: 1, archive: true },
  });
  const webhook = await server.createDestination({ name: "crm", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  const since = new Date(Date.now() - 60_000);
  const tracking = server.tracking(source.writeKey);
  await tracking.batch({
    batch: ids.map((messageId, i) => ({
      type: { case: "track" as const, value: { messageId, userId: `u${i}`, event: "Order Completed", properties: { total: i } } },
    })),
  });
  await server.waypost.delivery!.settle();
  await receiver.waitForRequests(base + ids.length);
  await eventually(async () => existsSync(path.join(directory, "calls")) && filesUnder(path.join(directory, "calls")).length > 0);
  // As retention would, a day on: every call is delivered and read by the archive, so each goes.
  await singleNodeJobTable.purgeOldMessages(server.pool, new Date(Date.now() + 86_400_000), 1_000);
  const left = await server.pool.query("SELECT count(*)::int AS n FROM messages WHERE source_id = $1", [source.id]);
  expect(left.rows[0].n).toBe(0);
  return { directory, source, archive, webhook, since, sent: base + ids.length };
}

function filesUnder(directory: string): string[] {
  return (
    readdirSync(directory, { recursive: true, withFileTypes: true }) as Array<{ isFile(): boolean; parentPath: string; name: string }>
  )
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

const bodies = (receiver: Receiver, from: number) =>
  receiver.requests.slice(from).map((r) => JSON.parse(r.body) as { messageId: string; event: string; properties: { replayed?: boolean } });

test("a replay sends the archived calls once through the destination's rules now; again as a second backfill; a call in two files once", async ({
  server,
  receiver,
}) => {
  const { directory, source, archive, webhook, since, sent: at } = await archivedAndForgotten(server, receiver);
  // The rules changed after the calls were archived: the replay sends them as they are now.
  await server.destinations.updateDestination({
    destination: {
      id: webhook.id,
      transform: "function transform(e) { e.properties.replayed = true; return e }",
      filter: { "properties.total": { $lt: 4 } },
    },
    updateMask: { paths: ["transform", "filter"] },
  });

  const replay = async () => {
    const { backfill } = await server.destinations.backfillDestination({
      destinationId: webhook.id,
      since: timestampFromDate(since),
      fromArchive: archive.id,
    });
    expect(backfill).toMatchObject({ fromArchive: archive.id, state: JobState.RUNNING });
    await server.waypost.jobs!.idle();
    await server.waypost.delivery!.settle();
    return (await server.destinations.getBackfill({ id: backfill!.id })).backfill!;
  };

  const first = await replay();
  expect(first).toMatchObject({ state: JobState.DONE, archiveCallsRead: 5n, created: 4n, filtered: 1n, fromArchive: archive.id });
  await receiver.waitForRequests(at + 4);
  const sent = bodies(receiver, at);
  expect(sent.map((b) => b.messageId).sort()).toEqual(["r-0", "r-1", "r-2", "r-3"]);
  expect(sent.every((b) => b.properties.replayed === true)).toBe(true);
  // Stored again, tagged with the job, and not on the log: the archive does not archive its replay.
  const stored = await server.pool.query("SELECT message_id, replay_job, log_xid FROM messages WHERE source_id = $1 ORDER BY message_id", [
    source.id,
  ]);
  expect(stored.rows).toEqual(["r-0", "r-1", "r-2", "r-3"].map((m) => ({ message_id: m, replay_job: first.id, log_xid: null })));

  // The same calls in a second file of the hour (a file written twice, or listed twice): once per job all the same.
  for (const file of filesUnder(path.join(directory, "calls"))) {
    copyFileSync(file, path.join(path.dirname(file), `ffffffffffffffffffffffffffffffff${path.basename(file).slice(32)}`));
  }
  const second = await replay();
  expect(second).toMatchObject({ state: JobState.DONE, archiveCallsRead: 10n, created: 4n, filtered: 1n });
  await receiver.waitForRequests(at + 8);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(receiver.requests).toHaveLength(at + 8);
  expect(
    bodies(receiver, at + 4)
      .map((b) => b.messageId)
      .sort(),
  ).toEqual(["r-0", "r-1", "r-2", "r-3"]);
});

test("a replay taken over, or a page read again, queues no call twice", async ({ server, receiver }) => {
  const { archive, webhook, since, sent: at } = await archivedAndForgotten(server, receiver);
  // A job held by a lease nobody here works: its pages are run by hand, by two "processes".
  const job = await withTransaction(server.pool, async (tx) => {
    const row = await insertJob(tx, {
      id: randomUUID(),
      kind: "backfill",
      destinationId: webhook.id,
      params: { since: since.toISOString(), until: new Date().toISOString(), revision: 1, fromArchive: archive.id },
      progress: { candidates: 0, created: 0, filtered: 0, read: 0 },
      state: "running",
      at: new Date(),
    });
    await tx.query("UPDATE background_jobs SET lease_id = $2, lease_until = now() + interval '1 hour' WHERE id = $1", [
      row.id,
      randomUUID(),
    ]);
    return row;
  });
  const page = (handler: ReturnType<typeof createBackfillJob>, at: JobRow) =>
    withTransaction(server.pool, async (tx) => handler.page(tx, at, new Date()));
  const first = createBackfillJob({ jobTable: singleNodeJobTable, pageSize: 2 });
  const second = createBackfillJob({ jobTable: singleNodeJobTable, pageSize: 2 });
  try {
    const one = await page(first, job);
    expect(one).toMatchObject({ kind: "page", last: false, progress: { read: 2, created: 2 } });
    // Its first page again (a holder whose commit was not seen, say): nothing queued twice.
    const again = await page(second, job);
    expect(again).toMatchObject({ kind: "page", progress: { read: 2, created: 0 } });
    // The other process goes on from the first's cursor, part way into the file, to the end.
    let at: JobRow = { ...job, cursor: one.kind === "page" ? one.cursor : null, progress: one.kind === "page" ? one.progress : {} };
    for (let n = 0; n < 10; n++) {
      const next = await page(second, at);
      if (next.kind !== "page") throw new Error(`stopped: ${next.error}`);
      at = { ...at, cursor: next.cursor, progress: next.progress };
      if (next.last) break;
    }
    expect(at.progress).toMatchObject({ read: 5, created: 5, filtered: 0 });
  } finally {
    await first.close?.();
    await second.close?.();
  }
  const queuedOrDone = await server.pool.query(
    `SELECT (SELECT count(*)::int FROM delivery_queue WHERE destination_id = $1) + (SELECT count(*)::int FROM delivery_history WHERE destination_id = $1) AS n`,
    [webhook.id],
  );
  expect(queuedOrDone.rows[0].n).toBe(5);
  server.waypost.delivery!.poke();
  await server.waypost.delivery!.settle();
  await receiver.waitForRequests(at + 5);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(receiver.requests).toHaveLength(at + 5);
  expect(
    bodies(receiver, at)
      .map((b) => b.messageId)
      .sort(),
  ).toEqual(ids);
});

test("fromArchive must name another destination that is a lake with archive on", async ({ server, receiver }) => {
  const source = await server.createSource();
  const webhook = await server.createDestination({ name: "crm", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  const lake = await server.createDestination({
    name: "lake",
    sourceIds: [source.id],
    kind: DestinationKind.LAKE,
    lake: { url: pathToFileURL(mkdtempSync(path.join(scratch, "plain-"))).href },
  });
  const since = timestampFromDate(new Date(Date.now() - 3_600_000));
  const refused = (fromArchive: string, destinationId = webhook.id) =>
    server.destinations.backfillDestination({ destinationId, since, fromArchive }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
  for (const [fromArchive, message] of [
    [lake.id, /fromArchive: .* is not a lake with archive on/],
    [webhook.id, /fromArchive: is the destination itself/],
    [randomUUID(), /fromArchive: no destination/],
    ["not-an-id", /fromArchive: /],
  ] as const) {
    const error = await refused(fromArchive);
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(error?.rawMessage).toMatch(message);
  }
  const other = await server.createDestination({ name: "other", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  expect((await refused(other.id))?.rawMessage).toMatch(/is not a lake with archive on/);
  expect((await server.destinations.listBackfills({ destinationId: webhook.id })).backfills).toEqual([]);
});
