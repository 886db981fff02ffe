import { expect } from "vitest";
import { DestinationKind } from "../../gen/waypost/v1/destination_pb.js";
import { createJobRunner } from "../../src/background/job-runner.js";
import { selectJob } from "../../src/db/queries/background-jobs.js";
import { createLakeDeletionJob } from "../../src/deletion/lake-deletion-job.js";
import { createLogger } from "../../src/logger.js";
import { createAddressGuard } from "../../src/outbound/address-guard.js";
import { testWith } from "../helpers/fixtures.js";
import { useS3Server } from "../helpers/s3-server.js";
import { deletionClient, type LakePlace, lakeRowsOf, startLakeJobsNow, waitForCompletion } from "./lake-support.js";

const test = testWith({ server: { config: { delivery: { pollIntervalMs: 100 } } } });
const lake = useS3Server(test, "waypost-lake-deletion-retry");

test("a store answering 500 in the middle of a lake deletion: the page is tried again and the job completes", async ({ server }) => {
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "lake",
    sourceIds: [source.id],
    kind: DestinationKind.LAKE,
    lake: {
      url: "s3://lake/retry",
      endpoint: lake.s3.endpoint,
      accessKeyId: lake.s3.accessKeyId,
      secretAccessKey: lake.s3.secretAccessKey,
      flushSeconds: 1,
    },
  });
  const place: LakePlace = { kind: "s3", s3: lake.s3, bucket: "lake", prefix: "retry" };
  const client = server.tracking(source.writeKey);
  // Four flushes, each with both users: four files per table to rewrite, one a page.
  for (let i = 0; i < 4; i++) {
    await client.batch({
      batch: ["gone", "stays"].map((userId) => ({
        type: { case: "track" as const, value: { messageId: `${userId}-${i}`, userId, event: "Played", properties: { round: i } } },
      })),
    });
    await server.waypost.delivery!.settle();
  }
  const before = await lakeRowsOf(place, lake.scratch);
  expect(before.filter((row) => row.includes('"gone"'))).toHaveLength(8);

  // This file's own runner works the job, a file a page; the server's stops taking jobs.
  await server.waypost.jobs!.stop();
  const handler = createLakeDeletionJob({
    pool: server.pool,
    guard: createAddressGuard({ allowPrivate: true, allowedCidrs: [] }),
    filesPerPage: 1,
  });
  let pages = 0;
  const failedPages: string[] = [];
  const runner = createJobRunner({
    pool: server.pool,
    clock: server.clock,
    logger: createLogger("silent"),
    leaseMs: 30_000,
    pollMs: 100,
    retryMs: 200,
    handlers: {
      backfill: { page: async () => ({ kind: "stop", state: "failed", error: "no backfills here" }) },
      retry: { page: async () => ({ kind: "stop", state: "failed", error: "no retries here" }) },
      lake_deletion: {
        ...handler,
        async prepare(job) {
          const prepared = await handler.prepare!(job).catch((error: unknown) => {
            failedPages.push(String(error));
            throw error;
          });
          // After the second page's files: every request of the next page's first call (the SDK's three attempts) gets a 500.
          if (++pages === 2) lake.s3.failNext(3, 500);
          return prepared;
        },
      },
    },
  });
  await runner.start();
  try {
    const created = (await deletionClient(server).createDeletionRequest({ userId: "gone" })).deletionRequest!;
    expect(created.lakesTotal).toBe(1n);
    await startLakeJobsNow(server, created.id);
    runner.wake();
    const done = await waitForCompletion(server, created.id);
    expect(done).toMatchObject({ lakesDone: 1n, lakesFailed: 0n, lakeRowsDeleted: 8n });

    const job = (await server.pool.query<{ id: string }>("SELECT id FROM background_jobs WHERE destination_id = $1", [destination.id]))
      .rows[0]!;
    const row = await selectJob(server.pool, "lake_deletion", job.id);
    // The third page failed once (the 500s), was tried again from the same cursor, and the job went on to the end.
    expect(row).toMatchObject({ state: "done", failures: 0, progress: { filesScanned: 8, filesRewritten: 8, rowsDeleted: 8 } });
    expect(failedPages).toEqual([expect.stringMatching(/HTTP 500/)]);
    expect(lake.s3.requests.filter((r) => r.refused === 500)).toHaveLength(3);
    expect(pages).toBeGreaterThan(8);

    const after = await lakeRowsOf(place, lake.scratch);
    expect(after.filter((r) => r.includes('"gone"'))).toEqual([]);
    expect(after).toEqual(before.filter((r) => !r.includes('"gone"')));
  } finally {
    await runner.stop();
  }
});
