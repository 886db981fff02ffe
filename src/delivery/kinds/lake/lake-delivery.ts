import { createHash, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type pg from "pg";
import type { Clock } from "../../../clock.js";
import type { AttemptResult, ClaimedDelivery } from "../../../db/job-table/index.js";
import { type LakeFileWritten, recordLakeFilesWritten } from "../../../db/queries/lake-files-written.js";
import { createPostgresColumnRegistry } from "../../../lake/postgres-column-registry.js";
import { createFileWriter, type FileWriter } from "../../../lake/file-writer.js";
import { lakeRows, type TableBatch } from "../../../lake/lake-rows.js";
import { parseLakeUrl } from "../../../lake/lake-url.js";
import { formatFiles, objectKey } from "../../../lake/object-keys.js";
import { type ObjectStore, openLakeStore } from "../../../lake/object-store.js";
import type { Logger } from "../../../logger.js";
import type { AddressGuard } from "../../../outbound/address-guard.js";
import { redact } from "../broker-address.js";
import { createHeldBatches, type HeldCall } from "../held-batch.js";
import type { DestinationOf, KindDelivery } from "../kind.js";
import { createTargetCache, type Target } from "../target-cache.js";
import { type LakeSettings, lakeLabel } from "./lake-settings.js";

export type LakeDestination = DestinationOf<"lake", LakeSettings>;

export interface LakeKindOptions {
  pool: pg.Pool;
  clock: Clock;
  logger: Logger;
  guard: AddressGuard;
  /** Where files are written before they are uploaded (a directory of the OS's temp dir by default). */
  workDirectory?: string | undefined;
}

/** A destination's open lake at one settings revision: its store, its file writer, and its writes in flight. */
interface Lake extends Target {
  destinationId: string;
  settings: LakeSettings;
  label: string;
  store: ObjectStore;
  writer: FileWriter;
  writing: Set<Promise<void>>;
}

interface Waiting {
  job: ClaimedDelivery;
  body: string;
}

/** A lake whose destination sent nothing for this long has its store closed (it reopens on the next call). */
const idleCloseMs = 5 * 60_000;
/** The most calls one flush writes, whatever their size (a file per table and hour of them). */
const maxCallsPerFlush = 50_000;

/**
 * The lake kind: calls wait here until their flush (`flushSeconds` after the
 * first, or `maxFileMb` of calls), then each table and hour of them is
 * written as one file and uploaded; every call of the flush is delivered
 * when its last object is stored, or retried with them all. A file is named
 * by a hash of the calls it holds, so the same calls flushed again (a page
 * of the call log read again after a crash or a failed upload) replace the
 * same objects rather than adding copies.
 */
export function createLakeKind(options: LakeKindOptions): KindDelivery<LakeDestination> {
  const { clock, logger } = options;
  let workDirectory: Promise<string> | undefined;
  const work = () =>
    (workDirectory ??= options.workDirectory ? Promise.resolve(options.workDirectory) : mkdtemp(path.join(tmpdir(), "waypost-lake-")));
  const held = createHeldBatches<Waiting, Lake, AttemptResult[]>({ clock, send: flush });
  const lakes = createTargetCache<LakeSettings, Lake>({
    clock,
    idleMs: idleCloseMs,
    busy: (lake) => held.holds(lake.destinationId) || lake.writing.size > 0,
    create: openLake,
  });

  function openLake(destinationId: string, settings: LakeSettings): Lake {
    const lake: Lake = {
      destinationId,
      settings,
      label: lakeLabel(settings),
      store: openLakeStore(settings, options.guard),
      writer: createFileWriter({ format: settings.format }),
      writing: new Set(),
      async close() {
        held.release(destinationId, lake);
        await Promise.allSettled([...lake.writing]);
        await Promise.allSettled([lake.store.close(), lake.writer.close()]);
      },
    };
    return lake;
  }

  function flush(lake: Lake, calls: Array<HeldCall<Waiting, AttemptResult[]>>): Promise<void> {
    const attemptedAt = clock.now();
    const started = performance.now();
    const operation = { id: randomUUID(), calls: calls.length };
    const done = writeFiles(lake, calls)
      .then((discarded) => ({ ok: true as const, discarded }))
      .catch((error: unknown) => ({
        ok: false as const,
        error: redact(`lake write failed: ${String(error)}`, [lake.settings.secretAccessKey]),
      }))
      .then((result) => {
        const latencyMs = Math.round(performance.now() - started);
        calls.forEach(({ resolve }, i) => {
          const discarded = result.ok ? (result.discarded[i] ?? 0) : 0;
          resolve([
            {
              urlIndex: 0,
              url: lake.label,
              attemptedAt,
              // Every failure of a store is retried: a wrong key or a missing bucket is fixed by its owner, and the
              // calls wait for that (on the retry schedule, the circuit breaker and the retry deadline) rather than fail.
              outcome: result.ok ? "success" : "retryable",
              statusCode: null,
              error: result.ok ? null : result.error,
              latencyMs,
              responseBody: discarded > 0 ? `${discarded} values did not fit their column's type and were written as null` : null,
              ...(discarded > 0 ? { discardedValues: discarded } : {}),
              batch: operation,
            },
          ]);
        });
      });
    lake.writing.add(done);
    void done.finally(() => lake.writing.delete(done));
    return done;
  }

  /** Writes and uploads a flush's files; each call's values written as null. */
  async function writeFiles(lake: Lake, calls: ReadonlyArray<HeldCall<Waiting, AttemptResult[]>>): Promise<number[]> {
    const { settings } = lake;
    const registry = createPostgresColumnRegistry(options.pool, lake.destinationId);
    const rows = await lakeRows(
      // The archive keeps the call as stored; the layout's tables take it as the destination's rules shaped it.
      calls.map(({ item: { job, body } }) => ({
        payload: settings.archive ? job.payload : body,
        receivedAt: job.receivedAt,
        sentAt: job.sentAt ?? undefined,
        sourceId: job.sourceId,
      })),
      registry,
      { archive: settings.archive, layout: !settings.archive, loadedAt: clock.now() },
    );
    const name = flushName(lake.destinationId, calls);
    const prefix = prefixOf(settings.url);
    const directory = await work();
    const written: LakeFileWritten[] = [];
    for (const batch of rows.batches) written.push(await writeFile(lake, batch, prefix, name, directory));
    // What the console shows as written: the files are stored whether or not this is recorded.
    await recordLakeFilesWritten(options.pool, lake.destinationId, written, clock.now()).catch((error: unknown) =>
      logger.warn({ err: error, destinationId: lake.destinationId }, "recording a lake's files failed"),
    );
    return rows.discarded;
  }

  async function writeFile(lake: Lake, batch: TableBatch, prefix: string, name: string, directory: string): Promise<LakeFileWritten> {
    const { format } = lake.settings;
    const file = path.join(directory, `${randomUUID()}.${formatFiles[format].extension}`);
    try {
      const bytes = await lake.writer.write(batch, file);
      const key = objectKey(prefix, batch.table, batch.partition, name, format);
      await lake.store.put(key, { path: file }, formatFiles[format].contentType);
      return { key, rows: batch.rowCount, bytes };
    } finally {
      await rm(file, { force: true });
    }
  }

  return {
    openDestinations: () => lakes.destinations(),
    reconcile: (current) => lakes.reconcile(current),
    deliver(job, destination, body) {
      const lake = lakes.get(destination.id, destination.revision, () => destination.lake);
      const { flushSeconds, maxFileMb } = destination.lake;
      const limits = { maxCalls: maxCallsPerFlush, maxBytes: maxFileMb * 1024 * 1024, maxWaitMs: flushSeconds * 1000 };
      return held.add(destination.id, lake, limits, { job, body }, Buffer.byteLength(body));
    },
    inFlightLimit: () => maxCallsPerFlush * 2,
    batchWindow: (destination) => ({ calls: maxCallsPerFlush, waitMs: destination.lake.flushSeconds * 1000 }),
    label: (destination) => lakeLabel(destination.lake),
    span: (destination) => ({
      name: "write files",
      attributes: { "server.address": destination.lake.endpoint || destination.lake.url },
    }),
    tick() {
      held.tick();
      void lakes.sweep();
    },
    flush: () => held.flush(),
    async close() {
      await held.close();
      await lakes.close();
      if (workDirectory) await rm(await workDirectory, { recursive: true, force: true }).catch(() => {});
      logger.debug("lake kind closed");
    },
  };
}

/** The prefix of a lake URL's keys ("" for a directory: its keys start at the directory). */
function prefixOf(url: string): string {
  const location = parseLakeUrl(url);
  return location.prefix;
}

/**
 * A flush's file name: a hash of its destination and the ids of the calls
 * it holds, in order. The same calls flushed again get the same name (their
 * objects are replaced); any other set of calls gets a name of its own.
 */
function flushName(destinationId: string, calls: ReadonlyArray<HeldCall<Waiting, AttemptResult[]>>): string {
  const hash = createHash("sha256").update(destinationId);
  for (const { item } of calls) hash.update(`\n${item.job.id}`);
  return hash.digest("hex").slice(0, 32);
}
