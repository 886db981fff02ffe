import { randomUUID } from "node:crypto";
import type { Clock } from "../../../clock.js";
import type { WarehouseConfig } from "../../../config.js";
import type { AttemptResult, ClaimedDelivery } from "../../../db/job-table/index.js";
import type { Logger } from "../../../logger.js";
import type { Metrics } from "../../../metrics.js";
import { createWarehouseLoader, type DiscardCounts, type LoadOutcome, type WarehouseLoader } from "../../../warehouse/loader.js";
import type { DatabaseIdentity } from "../../../warehouse/ownership.js";
import { maskPostgresUrl } from "../../../warehouse/settings.js";
import type { DestinationOf, KindDelivery } from "../kind.js";
import type { PostgresSettings } from "./settings.js";

export type PostgresDestination = DestinationOf<"postgres", PostgresSettings>;

export interface WarehouseKindOptions {
  /** Its batch size (`batchSize`): a destination holds two batches here, whatever the process's delivery concurrency. */
  config: WarehouseConfig;
  clock: Clock;
  logger: Logger;
  metrics?: Metrics | undefined;
  /** Waypost's own database: a warehouse that turns out to be it is refused before anything is loaded. */
  ownDatabase?: () => Promise<DatabaseIdentity>;
  /** How loaders are made (tests count pools); the real loader by default. */
  createLoader?: (settings: PostgresSettings, onDiscards: (counts: DiscardCounts) => void) => WarehouseLoader;
}

/** A destination's open warehouse: its pool, and the calls waiting for the next batch. */
interface Target {
  settings: PostgresSettings;
  label: string;
  loader: WarehouseLoader;
  /** Each call with the body to load (the call as its destination's rules shaped it). */
  waiting: Array<{ job: ClaimedDelivery; body: string; resolve: (results: AttemptResult[]) => void }>;
  /** When the first waiting call arrived (clock ms). */
  firstAt: number | undefined;
  lastUsed: number;
  loading: Set<Promise<void>>;
}

/** A warehouse whose destination sent nothing for this long has its pool closed (it reopens on the next call). */
const idleCloseMs = 5 * 60_000;

/**
 * The Postgres warehouse kind: calls wait here until their batch is loaded
 * (the batch size, or the flush interval after the first, whichever comes
 * first), and each learns its outcome when the batch's transaction ends.
 * The loop keeps their leases alive meanwhile. A destination holds two
 * batches here, so the next fills while one loads; the batch size is its
 * own setting, not a share of the process's delivery concurrency (the
 * scheduler keeps a batching destination's deliveries outside those slots). One pool per destination, bounded, closed when the
 * destination's warehouse settings change or it goes quiet.
 */
export interface WarehouseKind extends KindDelivery<PostgresDestination> {
  tick(): void;
  flush(): void;
  /** Destinations with an open pool here. */
  openDestinations(): string[];
  reconcile(current: ReadonlyMap<string, PostgresDestination>): void;
}

export function createWarehouseKind(options: WarehouseKindOptions): WarehouseKind {
  const { config, clock, logger } = options;
  const batchSize = Math.max(1, config.batchSize);
  const targets = new Map<string, Target>();
  const makeLoader =
    options.createLoader ??
    ((settings: PostgresSettings, onDiscards: (counts: DiscardCounts) => void) =>
      createWarehouseLoader({
        url: settings.url,
        schema: settings.schema,
        maxConnections: config.connections,
        maxColumns: config.maxColumns,
        onDiscards,
        ownDatabase: options.ownDatabase,
      }));

  function targetOf(destination: PostgresDestination): Target {
    const settings = destination.postgres;
    let target = targets.get(destination.id);
    if (target && (target.settings.url !== settings.url || target.settings.schema !== settings.schema)) {
      retire(destination.id, target);
      target = undefined;
    }
    if (!target) {
      const id = destination.id;
      target = {
        settings,
        label: `${maskPostgresUrl(settings.url)}#${settings.schema}`,
        loader: makeLoader(settings, (counts) => {
          if (counts.typeMismatches > 0) options.metrics?.warehouseTypeMismatches.inc({ destination_id: id }, counts.typeMismatches);
          if (counts.refusedColumns > 0) options.metrics?.warehouseRefusedColumns.inc({ destination_id: id }, counts.refusedColumns);
        }),
        waiting: [],
        firstAt: undefined,
        lastUsed: clock.now().getTime(),
        loading: new Set(),
      };
      targets.set(id, target);
    }
    return target;
  }

  /** Loads what the target holds, ends its pool once its loads are done. */
  function retire(id: string, target: Target) {
    targets.delete(id);
    load(target);
    void Promise.allSettled([...target.loading])
      .then(() => target.loader.close())
      .catch((error) => logger.warn({ err: error, destinationId: id }, "closing a warehouse pool failed"));
  }

  function load(target: Target) {
    if (target.waiting.length === 0) return;
    const batch = target.waiting.splice(0);
    target.firstAt = undefined;
    const attemptedAt = clock.now();
    const started = performance.now();
    // One transaction, one batch attempt for its calls (a call the fallback refused carries its own outcome and error).
    const operation = { id: randomUUID(), calls: batch.length };
    const work = target.loader
      .load(batch.map(({ job, body }) => ({ payload: body, receivedAt: job.receivedAt, sentAt: job.sentAt ?? undefined })))
      .catch((error: unknown): LoadOutcome[] =>
        batch.map(() => ({ outcome: "retryable", error: `warehouse load failed: ${String(error)}` })),
      )
      .then((outcomes) => {
        const latencyMs = Math.round(performance.now() - started);
        batch.forEach(({ resolve }, i) => {
          const outcome = outcomes[i] ?? { outcome: "retryable", error: "no outcome" };
          resolve([
            {
              urlIndex: 0,
              url: target.label,
              attemptedAt,
              outcome: outcome.outcome,
              statusCode: null,
              error: outcome.outcome === "success" ? null : outcome.error,
              latencyMs,
              // The warehouse's answer: which values of the call were not stored in their columns.
              responseBody: outcome.outcome === "success" ? (outcome.note ?? null) : null,
              ...(outcome.outcome === "success" && outcome.discarded ? { discardedValues: outcome.discarded } : {}),
              batch: operation,
            },
          ]);
        });
      });
    target.loading.add(work);
    void work.finally(() => target.loading.delete(work));
  }

  return {
    openDestinations: () => [...targets.keys()],
    reconcile(current) {
      for (const [id, target] of [...targets]) {
        const settings = current.get(id)?.postgres;
        if (!settings || settings.url !== target.settings.url || settings.schema !== target.settings.schema) retire(id, target);
      }
    },
    deliver(job, destination, body) {
      const target = targetOf(destination);
      target.lastUsed = clock.now().getTime();
      return new Promise<AttemptResult[]>((resolve) => {
        target.waiting.push({ job, body, resolve });
        target.firstAt ??= target.lastUsed;
        if (target.waiting.length >= batchSize) load(target);
      });
    },
    inFlightLimit: () => batchSize * 2,
    label: (destination) => `${maskPostgresUrl(destination.postgres.url)}#${destination.postgres.schema}`,
    span: (destination) => ({
      name: "load",
      attributes: {
        "db.system.name": "postgresql",
        "db.namespace": destination.postgres.schema,
        "server.address": hostOf(destination.postgres.url),
      },
    }),
    tick() {
      const now = clock.now().getTime();
      for (const [id, target] of targets) {
        if (target.firstAt !== undefined && now - target.firstAt >= config.flushMs) load(target);
        else if (target.waiting.length === 0 && target.loading.size === 0 && now - target.lastUsed >= idleCloseMs) retire(id, target);
      }
    },
    flush() {
      for (const target of targets.values()) load(target);
    },
    async close() {
      const all = [...targets];
      targets.clear();
      for (const [, target] of all) load(target);
      await Promise.allSettled(all.flatMap(([, target]) => [...target.loading]));
      await Promise.allSettled(all.map(([, target]) => target.loader.close()));
    },
  };
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return "";
  }
}
