import type pg from "pg";
import type { PageOutcome } from "../background/job-runner.js";
import { callTypes } from "../calls/call.js";
import {
  enqueueReplayedCalls,
  forgetReplaySeen,
  markReplaySeen,
  selectDestinationSourceIds,
  storeReplayedCalls,
} from "../db/queries/archive-replay.js";
import type { BackfillRulesRow, JobRow } from "../db/queries/background-jobs.js";
import { selectDestination } from "../db/queries/destinations.js";
import { type ArchivedCall, type ArchiveReader, hourMs } from "../lake/archive-reader.js";
import type { AddressGuard } from "../outbound/address-guard.js";
import { holdsBack } from "../routing/route-rules.js";
import { backfillRules, routeInSlices } from "./backfill-routing.js";
import { archiveSettingsOfRow, openArchiveReader } from "./kinds/lake/lake-archive.js";
import type { LakeSettings } from "./kinds/lake/lake-settings.js";

/** Where a replay stands: the hour partition it reads, the last file of it done, and the file being read (its pages done). */
interface ReplayCursor {
  hour: number;
  afterKey: string;
  key?: string;
  part?: number;
}

interface ReplayProgress {
  candidates: number;
  created: number;
  filtered: number;
  read: number;
}

/** A file being read by a job here, kept between pages so a large file is downloaded once. */
interface OpenFile {
  key: string;
  /** Pages of it handed out so far. */
  part: number;
  pages: AsyncGenerator<ArchivedCall[]>;
}

interface OpenArchive {
  settingsJson: string;
  reader: ArchiveReader;
  file?: OpenFile;
  usedAt: number;
}

export interface ArchiveReplayOptions {
  /** Calls per page (a page of a file: the file reader's page). */
  pageSize: number;
  sliceSize: number;
  guard?: AddressGuard | undefined;
}

export const archiveGone = "the archive destination was deleted or is no longer an archive";

// Pages with nothing to replay (empty hours, files of other sources) before a page commits the cursor anyway.
const maxStepsPerPage = 48;
// An archive not used for this long (its job ended elsewhere, or was taken over) is closed.
const idleMs = 10 * 60_000;
const knownTypes = new Set<string>(callTypes);

/**
 * Replays a backfill's range from an archive lake (docs/lakes.md#replay):
 * lists the range's hour partitions of the archive's `calls` table one at a
 * time, reads each file in pages, keeps the calls received in the range of
 * the destination's current sources, marks them seen for the job (a call is
 * replayed at most once per job, whatever is read twice), routes them by the
 * destination's rules now, as a backfill does, stores those it passes again
 * where `messages` no longer has them, and queues a delivery of each. The
 * page's work commits with the job's cursor (the runner's transaction), so a
 * job taken over goes on from the last page committed.
 */
export function createArchiveReplay(options: ArchiveReplayOptions) {
  const { pageSize, sliceSize } = options;
  const open = new Map<string, OpenArchive>();

  async function closeArchive(jobId: string): Promise<void> {
    const archive = open.get(jobId);
    if (!archive) return;
    open.delete(jobId);
    await archive.file?.pages.return(undefined).catch(() => undefined);
    await archive.reader.close().catch(() => undefined);
  }

  function archiveOf(jobId: string, settings: LakeSettings): ArchiveReader {
    const now = Date.now();
    for (const [id, archive] of open) if (now - archive.usedAt > idleMs && id !== jobId) void closeArchive(id);
    const settingsJson = JSON.stringify(settings);
    const current = open.get(jobId);
    if (current && current.settingsJson === settingsJson) {
      current.usedAt = now;
      return current.reader;
    }
    if (current) void closeArchive(jobId);
    const reader = openArchiveReader(settings, options.guard);
    open.set(jobId, { settingsJson, reader, usedAt: now });
    return reader;
  }

  /** The next page of `key` from part `part`, from the open file when it stands there; done when the file has no more. */
  async function nextPart(jobId: string, reader: ArchiveReader, key: string, part: number): Promise<ArchivedCall[] | undefined> {
    const archive = open.get(jobId)!;
    let file = archive.file;
    if (!file || file.key !== key || file.part !== part) {
      await file?.pages.return(undefined).catch(() => undefined);
      file = { key, part: 0, pages: reader.readFile(key, pageSize) };
      archive.file = file;
      // Taken over, or this process lost its place: pages already replayed are read past (their calls are seen anyway).
      while (file.part < part) {
        const skipped = await file.pages.next();
        if (skipped.done) break;
        file.part++;
      }
    }
    const next = await file.pages.next();
    if (next.done) {
      archive.file = undefined;
      return undefined;
    }
    file.part++;
    return next.value;
  }

  return {
    async page(tx: pg.PoolClient, job: JobRow, destination: BackfillRulesRow, now: Date): Promise<PageOutcome> {
      const params = job.params as { since: string; until: string; fromArchive: string };
      const stored = job.progress as unknown as Partial<ReplayProgress>;
      const progress: ReplayProgress = { candidates: 0, created: 0, filtered: 0, read: 0, ...stored };
      const since = new Date(params.since).getTime();
      const until = new Date(params.until).getTime();
      const row = await selectDestination(tx, params.fromArchive);
      const settings = row && archiveSettingsOfRow(row);
      if (!settings) {
        await closeArchive(job.id);
        return { kind: "stop", state: "failed", error: archiveGone };
      }
      const reader = archiveOf(job.id, settings);
      const sources = new Set(await selectDestinationSourceIds(tx, job.destination_id));
      const at = job.cursor as Partial<ReplayCursor> | null;
      let cursor: ReplayCursor = {
        hour: at?.hour ?? Math.floor(since / hourMs) * hourMs,
        afterKey: at?.afterKey ?? "",
        ...(at?.key ? { key: at.key, part: at.part ?? 0 } : {}),
      };
      let calls: ArchivedCall[] = [];
      let last = false;
      for (let step = 0; step < maxStepsPerPage && calls.length === 0; step++) {
        if (cursor.hour >= until) {
          last = true;
          break;
        }
        const key = cursor.key ?? (await reader.listHour(cursor.hour)).find((k) => k > cursor.afterKey);
        if (key === undefined) {
          cursor = { hour: cursor.hour + hourMs, afterKey: "" };
          continue;
        }
        const part = cursor.key === key ? (cursor.part ?? 0) : 0;
        const page = await nextPart(job.id, reader, key, part);
        if (page === undefined) {
          cursor = { hour: cursor.hour, afterKey: key };
          continue;
        }
        cursor = { hour: cursor.hour, afterKey: cursor.afterKey, key, part: part + 1 };
        calls = page.filter((call) => {
          const at = call.receivedAt.getTime();
          return at >= since && at < until && sources.has(call.sourceId) && knownTypes.has(call.type);
        });
      }
      // Acceptance order within the page, for per-user ordering (files are named by hash, not by time).
      calls.sort((a, b) => a.receivedAt.getTime() - b.receivedAt.getTime());
      const seen = await markReplaySeen(tx, job.id, calls);
      const fresh = calls.filter((_, i) => seen.has(i));
      const rules = backfillRules(destination);
      const passes = holdsBack(rules)
        ? await routeInSlices(
            fresh.map((c) => ({ payload: c.payload, received_at: c.receivedAt })),
            rules,
            sliceSize,
          )
        : fresh.map(() => true);
      const routed = fresh.filter((_, i) => passes[i]);
      await storeReplayedCalls(tx, job.id, routed);
      const created = await enqueueReplayedCalls(tx, job.destination_id, routed, now);
      if (last) {
        await forgetReplaySeen(tx, job.id);
        await closeArchive(job.id);
      }
      return {
        kind: "page",
        cursor: { ...cursor },
        progress: {
          ...progress,
          read: progress.read + calls.length,
          created: progress.created + created,
          filtered: progress.filtered + (fresh.length - routed.length),
        },
        last,
      };
    },
    async close(): Promise<void> {
      await Promise.all([...open.keys()].map((id) => closeArchive(id)));
    },
  };
}
