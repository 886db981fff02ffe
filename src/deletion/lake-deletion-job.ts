import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type pg from "pg";
import type { JobHandler, PageOutcome } from "../background/job-runner.js";
import type { JobRow } from "../db/queries/background-jobs.js";
import { selectLakeSettingsRow } from "../db/queries/lake-deletion-jobs.js";
import { archiveColumns, archiveTable } from "../lake/archive-row.js";
import { createFileReader } from "../lake/file-reader.js";
import { rewriteWithout } from "../lake/file-rewrite.js";
import { createFileWriter, type FileWriter } from "../lake/file-writer.js";
import type { LakeType } from "../lake/lake-types.js";
import { parseLakeUrl } from "../lake/lake-url.js";
import type { LakeFormat } from "../lake/object-keys.js";
import { openLakeStore } from "../lake/object-store.js";
import { createPostgresColumnRegistry } from "../lake/postgres-column-registry.js";
import { userRowMatcher } from "../lake/user-row-match.js";
import type { AddressGuard } from "../outbound/address-guard.js";

/** What a lake deletion job was asked to do, as stored with it (insertLakeDeletionJobs). */
export interface LakeDeletionParams {
  userId: string;
  /** The request's affected sources this lake takes from. */
  sourceIds: string[];
}

/** Its counters, written with each page. */
export interface LakeDeletionCounters {
  filesScanned: number;
  filesRewritten: number;
  filesDeleted: number;
  rowsDeleted: number;
}

export interface LakeDeletionJobOptions {
  pool: pg.Pool;
  /** The outbound address guard: the store's endpoint passes it as the lake's own writes do. */
  guard: AddressGuard;
  /** Objects listed, and lake files read (one at a time), per page (default 20): a page is short, its cursor committed after it. */
  filesPerPage?: number;
  /** Rows read from a file at a time (default 10,000). */
  pageRows?: number;
}

/** What a page did, outside its transaction. */
type Prepared = { kind: "gone" } | ({ kind: "page"; after: string | undefined; last: boolean } & LakeDeletionCounters);

// `<table>/dt=YYYY-MM-DD/hr=HH/<32 hex>.<ext>` under the prefix: the lake's own files, nothing else in the bucket.
const lakeFileKey = /^([^/]+)\/dt=\d{4}-\d{2}-\d{2}\/hr=\d{2}\/[0-9a-f]{32}\.(parquet|ndjson\.gz)$/;

const destinationGone = "the lake destination was deleted: its files were not rewritten (remove them from the bucket by hand)";

/**
 * A lake deletion: the files of one lake destination written again without
 * a user's rows (docs/lakes.md#deletion-requests). Each page lists the next
 * `filesPerPage` objects after its cursor (a key: listings are in key
 * order) and rewrites those of them that hold the user's rows, one file at a
 * time, before its transaction; the page's transaction then commits the
 * cursor and counters. A page done again after a crash finds its files
 * already without the user and writes nothing.
 */
export function createLakeDeletionJob(options: LakeDeletionJobOptions): JobHandler {
  const filesPerPage = options.filesPerPage ?? 20;

  async function prepare(job: JobRow): Promise<Prepared> {
    const settings = await selectLakeSettingsRow(options.pool, job.destination_id);
    if (!settings) return { kind: "gone" };
    const params = job.params as unknown as LakeDeletionParams;
    const url = String(settings.url ?? "");
    const secret = String(settings.secretAccessKey ?? "");
    const store = openLakeStore(
      {
        url,
        endpoint: String(settings.endpoint ?? ""),
        region: String(settings.region ?? ""),
        accessKeyId: String(settings.accessKeyId ?? ""),
        secretAccessKey: secret,
      },
      options.guard,
    );
    const prefix = parseLakeUrl(url).prefix;
    const listPrefix = prefix === "" ? "" : `${prefix}/`;
    const after = typeof job.cursor?.after === "string" ? job.cursor.after : undefined;
    const counters: LakeDeletionCounters = { filesScanned: 0, filesRewritten: 0, filesDeleted: 0, rowsDeleted: 0 };
    const reader = createFileReader();
    const writers = new Map<LakeFormat, FileWriter>();
    const registry = createPostgresColumnRegistry(options.pool, job.destination_id);
    const workDirectory = await mkdtemp(path.join(tmpdir(), "waypost-lake-deletion-"));
    try {
      const entries = await store.list(listPrefix, { startAfter: after, limit: filesPerPage });
      for (const { key } of entries) {
        const match = lakeFileKey.exec(key.slice(listPrefix.length));
        if (!match) continue;
        const table = match[1]!;
        const format: LakeFormat = match[2] === "parquet" ? "parquet" : "ndjson_gz";
        let writer = writers.get(format);
        if (!writer) writers.set(format, (writer = createFileWriter({ format })));
        const types: ReadonlyMap<string, LakeType> = table === archiveTable ? archiveColumns : await registry.columns(table);
        const result = await rewriteWithout({
          store,
          reader,
          writer,
          key,
          format,
          types,
          drop: userRowMatcher(table, params),
          workDirectory,
          pageRows: options.pageRows,
        });
        counters.filesScanned++;
        if (result.outcome === "rewritten") counters.filesRewritten++;
        if (result.outcome === "deleted") counters.filesDeleted++;
        counters.rowsDeleted += result.rowsDropped;
      }
      return { kind: "page", after: entries.at(-1)?.key ?? after, last: entries.length < filesPerPage, ...counters };
    } catch (error) {
      // The job keeps the message: never the secret (the store's errors leave it out; this makes sure).
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(secret ? message.replaceAll(secret, "***") : message);
    } finally {
      await Promise.allSettled([reader.close(), ...[...writers.values()].map((w) => w.close()), store.close()]);
      await rm(workDirectory, { recursive: true, force: true });
    }
  }

  return {
    prepare,
    async page(_tx, job, _now, prepared): Promise<PageOutcome> {
      const done = prepared as Prepared;
      if (done.kind === "gone") return { kind: "stop", state: "cancelled", error: destinationGone };
      const before = job.progress as unknown as LakeDeletionCounters;
      return {
        kind: "page",
        cursor: done.after === undefined ? {} : { after: done.after },
        progress: {
          filesScanned: before.filesScanned + done.filesScanned,
          filesRewritten: before.filesRewritten + done.filesRewritten,
          filesDeleted: before.filesDeleted + done.filesDeleted,
          rowsDeleted: before.rowsDeleted + done.rowsDeleted,
        },
        last: done.last,
      };
    },
  };
}
