import { mkdtempSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { expect } from "vitest";
import { DeletionStatus } from "../../gen/waypost/v1/deletion_pb.js";
import { DestinationKind, LakeFormat } from "../../gen/waypost/v1/destination_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { useS3Server } from "../helpers/s3-server.js";
import { deletionClient, type LakePlace, lakeRowsOf, startLakeJobsNow, waitForCompletion } from "./lake-support.js";

const test = testWith({ server: { config: { delivery: { pollIntervalMs: 100 } } } });
const lake = useS3Server(test, "waypost-lake-deletion");

const track = (messageId: string, userId: string, total: number) => ({
  type: { case: "track" as const, value: { messageId, userId, event: "Order Completed", properties: { total, note: `n-${total}` } } },
});

test("a deletion request rewrites every lake's files without the user's rows, in a directory and in S3, archive and layout alike", async ({
  server,
}) => {
  const source = await server.createSource("with lakes");
  const other = await server.createSource("no lake");
  const dirLayout = mkdtempSync(path.join(lake.scratch, "layout-"));
  const dirArchive = mkdtempSync(path.join(lake.scratch, "archive-"));
  const s3Lake = { endpoint: lake.s3.endpoint, accessKeyId: lake.s3.accessKeyId, secretAccessKey: lake.s3.secretAccessKey };
  const lakes: Array<{ name: string; lake: Record<string, unknown>; place: LakePlace }> = [
    { name: "dir layout", lake: { url: pathToFileURL(dirLayout).href }, place: { kind: "dir", directory: dirLayout } },
    {
      name: "dir archive",
      lake: { url: pathToFileURL(dirArchive).href, archive: true, format: LakeFormat.NDJSON_GZ },
      place: { kind: "dir", directory: dirArchive },
    },
    {
      name: "s3 layout",
      lake: { url: "s3://lake/layout", format: LakeFormat.NDJSON_GZ, ...s3Lake },
      place: { kind: "s3", s3: lake.s3, bucket: "lake", prefix: "layout" },
    },
    {
      name: "s3 archive",
      lake: { url: "s3://lake/archive/all", archive: true, ...s3Lake },
      place: { kind: "s3", s3: lake.s3, bucket: "lake", prefix: "archive/all" },
    },
  ];
  for (const { name, lake } of lakes) {
    await server.createDestination({ name, sourceIds: [source.id], kind: DestinationKind.LAKE, lake: { flushSeconds: 1, ...lake } });
  }
  const client = server.tracking(source.writeKey);
  // Three flushes: both users (files to rewrite), only the doomed user (files to delete), only the other (files left alone).
  await client.batch({
    batch: [
      track("m-1", "doomed", 1),
      track("m-2", "keep", 2),
      track("m-3", "doomed", 3),
      { type: { case: "identify" as const, value: { messageId: "m-4", userId: "keep", traits: { plan: "pro" } } } },
      { type: { case: "identify" as const, value: { messageId: "m-5", userId: "doomed", traits: { plan: "free" } } } },
      { type: { case: "alias" as const, value: { messageId: "m-6", userId: "doomed-2", previousId: "doomed" } } },
      { type: { case: "alias" as const, value: { messageId: "m-7", userId: "keep-2", previousId: "keep" } } },
    ],
  });
  await server.waypost.delivery!.settle();
  await client.batch({ batch: [track("m-8", "doomed", 8), track("m-9", "doomed", 9)] });
  await server.waypost.delivery!.settle();
  await client.batch({ batch: [track("m-10", "keep", 10)] });
  await server.waypost.delivery!.settle();
  // The other source's calls of the same user reach no lake.
  await server.tracking(other.writeKey).track({ track: { messageId: "o-1", userId: "doomed", event: "Elsewhere" } });

  const before = new Map<string, string[]>();
  for (const { name, place } of lakes) {
    const rows = await lakeRowsOf(place, lake.scratch);
    expect(
      rows.some((row) => row.includes('"doomed"')),
      name,
    ).toBe(true);
    before.set(name, rows);
  }

  const created = (await deletionClient(server).createDeletionRequest({ userId: "doomed" })).deletionRequest!;
  expect(created).toMatchObject({ status: DeletionStatus.IN_PROGRESS, lakesTotal: 4n, lakesDone: 0n });
  // Not before the lakes' flush window and the start delay: nothing ran yet.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const waiting = (await deletionClient(server).getDeletionRequest({ id: created.id })).deletionRequest!;
  expect(waiting).toMatchObject({ status: DeletionStatus.IN_PROGRESS, lakeFilesScanned: 0n });

  await startLakeJobsNow(server, created.id);
  server.waypost.jobs!.wake();
  const done = await waitForCompletion(server, created.id);

  // The request's delete notification reaches the archives (as every call does) and stays there, as in Postgres.
  await server.waypost.delivery!.settle();
  let removed = 0;
  for (const { name, place } of lakes) {
    const all = await lakeRowsOf(place, lake.scratch);
    const notifications = all.filter((row) => row.includes('"type":"delete"'));
    expect(notifications.length, name).toBe(name.endsWith("archive") ? 1 : 0);
    const after = all.filter((row) => !notifications.includes(row));
    // No file holds the user (nor the alias that tied them to a new id); every other row is there once, as it was.
    expect(
      after.filter((row) => row.includes("doomed")),
      name,
    ).toEqual([]);
    const kept = before.get(name)!.filter((row) => !row.includes("doomed"));
    expect(after, name).toEqual(kept);
    expect(
      after.some((row) => row.includes('"keep"')),
      name,
    ).toBe(true);
    removed += before.get(name)!.length - after.length;
  }
  expect(done).toMatchObject({ lakesTotal: 4n, lakesDone: 4n, lakesFailed: 0n, lakeRowsDeleted: BigInt(removed) });
  expect(done.lakeFilesRewritten).toBeGreaterThan(0n);
  expect(done.lakeFilesDeleted).toBeGreaterThan(0n);
  expect(done.lakeFilesScanned).toBeGreaterThanOrEqual(done.lakeFilesRewritten + done.lakeFilesDeleted + 1n);
  expect(done.completeTime).toBeDefined();

  // The figures are frozen on the request: the ended jobs may be purged.
  await server.pool.query("DELETE FROM background_jobs WHERE deletion_request_id = $1", [created.id]);
  const later = (await deletionClient(server).getDeletionRequest({ id: created.id })).deletionRequest!;
  expect(later).toMatchObject({ status: DeletionStatus.COMPLETED, lakesDone: 4n, lakeRowsDeleted: BigInt(removed) });
});

test("a deletion request of a source without a lake starts no lake job and completes as before", async ({ server }) => {
  const source = await server.createSource("plain");
  await server.tracking(source.writeKey).track({ track: { userId: "solo", event: "Seen" } });
  const created = (await deletionClient(server).createDeletionRequest({ userId: "solo", sourceIds: [source.id] })).deletionRequest!;
  expect(created).toMatchObject({ status: DeletionStatus.COMPLETED, lakesTotal: 0n, messagesDeleted: 1n });
});
