import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type pg from "pg";
import type { BackfillDestinationRequest, BackfillDestinationResponseSchema } from "../../gen/waypost/v1/destination_pb.js";
import type { Clock } from "../clock.js";
import type { JobTableDriver } from "../db/job-table/index.js";
import { withTransaction } from "../db/pool.js";
import { type BackfillAsk, insertJob, lockBackfillRequests, selectCoveringBackfill } from "../db/queries/background-jobs.js";
import { selectDestination } from "../db/queries/destinations.js";
import type { BackfillParams, BackfillProgress } from "../delivery/backfill-job.js";
import { archiveSettingsOfRow } from "../delivery/kinds/lake/lake-archive.js";
import { invalidArgument, notFound, requireUuid } from "./errors.js";
import { backfillToProto } from "./job-proto.js";

export interface BackfillRequestsOptions {
  pool: pg.Pool;
  clock: Clock;
  /** Called after a backfill job is stored (this process's job runner, if any, takes it at once). */
  onJobCreated?: (() => void) | undefined;
  /** The job table's driver (the count of candidates). */
  jobTable: JobTableDriver;
}

type Response = MessageInitShape<typeof BackfillDestinationResponseSchema>;

/**
 * BackfillDestination. A backfill already running that covers what is
 * asked (selectCoveringBackfill) is returned instead of a second one: a
 * burst of the same request makes one job, not a queue of jobs that would
 * each read the whole range to create nothing. Requests of a destination
 * are stored one at a time (in this process, and across processes under a
 * lock), so two asked at once never both start.
 */
export function createBackfillRequests(options: BackfillRequestsOptions) {
  const { pool, clock } = options;
  const { jobTable } = options;
  // Per destination, the request being stored here: the next waits for it
  // rather than for a pooled connection held on the database's lock.
  const storing = new Map<string, Promise<unknown>>();

  function parse(req: BackfillDestinationRequest) {
    const destinationId = requireUuid("destinationId", req.destinationId);
    if (!req.since) throw invalidArgument("since", "is required");
    const since = timestampDate(req.since);
    const now = clock.now();
    const until = req.until ? timestampDate(req.until) : now;
    if (Number.isNaN(since.getTime())) throw invalidArgument("since", "is not a valid time");
    if (Number.isNaN(until.getTime())) throw invalidArgument("until", "is not a valid time");
    if (until.getTime() <= since.getTime()) throw invalidArgument("until", "must be after since");
    const fromArchive = req.fromArchive === "" ? undefined : requireUuid("fromArchive", req.fromArchive);
    if (fromArchive === destinationId)
      throw invalidArgument("fromArchive", "is the destination itself: replay an archive into another destination");
    return { destinationId, since, until, now, fromArchive };
  }

  /** A replay's archive: a lake destination with archive on (checked again by each page: it may change meanwhile). */
  async function checkArchive(fromArchive: string): Promise<void> {
    const archive = await selectDestination(pool, fromArchive);
    if (!archive) throw invalidArgument("fromArchive", `no destination ${JSON.stringify(fromArchive)}`);
    if (!archiveSettingsOfRow(archive)) {
      throw invalidArgument("fromArchive", `destination ${JSON.stringify(fromArchive)} is not a lake with archive on`);
    }
  }

  async function store(ask: BackfillAsk, now: Date): Promise<Response> {
    const covering = await selectCoveringBackfill(pool, ask);
    if (covering) return { backfill: backfillToProto(covering), alreadyRunning: true };
    const stored = await withTransaction(pool, async (tx) => {
      await lockBackfillRequests(tx, ask.destinationId);
      const running = await selectCoveringBackfill(tx, ask);
      if (running) return { row: running, alreadyRunning: true };
      // A replay's calls are in files, not counted up front: it reads them as it goes (progress.read).
      const candidates = ask.fromArchive ? 0 : await jobTable.reads.countBackfillCandidates(tx, ask);
      const params: BackfillParams = {
        since: ask.since.toISOString(),
        until: ask.until.toISOString(),
        revision: ask.revision,
        ...(ask.fromArchive ? { fromArchive: ask.fromArchive } : {}),
      };
      const progress: BackfillProgress = { candidates, created: 0, filtered: 0, ...(ask.fromArchive ? { read: 0 } : {}) };
      const row = await insertJob(tx, {
        id: randomUUID(),
        kind: "backfill",
        destinationId: ask.destinationId,
        params: { ...params },
        progress: { ...progress },
        // Nothing to create: it ends at once (and is still listed).
        state: candidates > 0 || ask.fromArchive ? "running" : "done",
        // The moment `until` defaults to: a backfill asked up to now covers what came after.
        at: now,
      });
      return { row, alreadyRunning: false };
    });
    if (!stored.alreadyRunning && stored.row.state === "running") options.onJobCreated?.();
    return { backfill: backfillToProto(stored.row), alreadyRunning: stored.alreadyRunning };
  }

  return {
    async backfillDestination(req: BackfillDestinationRequest): Promise<Response> {
      const { now, ...asked } = parse(req);
      const destination = await selectDestination(pool, asked.destinationId);
      if (!destination) throw notFound("destination", asked.destinationId);
      if (asked.fromArchive) await checkArchive(asked.fromArchive);
      const ask: BackfillAsk = { ...asked, revision: destination.revision };
      const before = storing.get(ask.destinationId);
      const run = (before ?? Promise.resolve()).catch(() => undefined).then(() => store(ask, now));
      storing.set(ask.destinationId, run);
      try {
        return await run;
      } finally {
        if (storing.get(ask.destinationId) === run) storing.delete(ask.destinationId);
      }
    },
  };
}
