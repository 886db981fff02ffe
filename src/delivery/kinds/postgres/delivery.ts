import { randomUUID } from "node:crypto";
import type { Clock } from "../../../clock.js";
import type { WarehouseConfig } from "../../../config.js";
import type { AttemptResult, ClaimedDelivery } from "../../../db/job-table/index.js";
import type { Logger } from "../../../logger.js";
import type { Metrics } from "../../../metrics.js";
import { createWarehouseLoader, type DiscardCounts, type LoadOutcome, type WarehouseLoader } from "../../../warehouse/loader.js";
import type { DatabaseIdentity } from "../../../warehouse/ownership.js";
import { maskPostgresUrl } from "../../../warehouse/settings.js";
import { createHeldBatches, type HeldCall } from "../held-batch.js";
import type { DestinationOf, KindDelivery } from "../kind.js";
import { createTargetCache, type Target } from "../target-cache.js";
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

/** A destination's open warehouse at one settings revision: its pool, and its loads in flight. */
interface Warehouse extends Target {
  destinationId: string;
  /** Where its attempts say they went: the URL masked, and the schema. */
  label: string;
  loader: WarehouseLoader;
  loading: Set<Promise<void>>;
}

/** A call waiting for its batch, with the body to load (the call as its destination's rules shaped it). */
interface Waiting {
  job: ClaimedDelivery;
  body: string;
}

/** A warehouse whose destination sent nothing for this long has its pool closed (it reopens on the next call). */
const idleCloseMs = 5 * 60_000;

/**
 * The Postgres warehouse kind: calls wait here until their batch is loaded
 * (the batch size, or the flush interval after the first, whichever comes
 * first: held-batch.ts), and each learns its outcome when the batch's
 * transaction ends. The loop keeps their leases alive meanwhile. A
 * destination holds two batches here, so the next fills while one loads;
 * the batch size is its own setting, not a share of the process's delivery
 * concurrency (the scheduler keeps a batching destination's deliveries
 * outside those slots). One pool per destination and settings revision
 * (target-cache.ts), bounded, closed when the destination's settings move
 * on or it goes quiet.
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
  const limits = { maxCalls: batchSize, maxWaitMs: config.flushMs };
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
  const held = createHeldBatches<Waiting, Warehouse, AttemptResult[]>({ clock, send: load });
  const warehouses = createTargetCache<PostgresSettings, Warehouse>({
    clock,
    idleMs: idleCloseMs,
    // Calls waiting for their batch, or a batch loading, keep a pool open however long since the last call came.
    busy: (warehouse) => held.holds(warehouse.destinationId) || warehouse.loading.size > 0,
    create: openWarehouse,
  });

  function openWarehouse(id: string, settings: PostgresSettings): Warehouse {
    const warehouse: Warehouse = {
      destinationId: id,
      label: labelOf(settings),
      loader: makeLoader(settings, (counts) => {
        if (counts.typeMismatches > 0) options.metrics?.warehouseTypeMismatches.inc({ destination_id: id }, counts.typeMismatches);
        if (counts.refusedColumns > 0) options.metrics?.warehouseRefusedColumns.inc({ destination_id: id }, counts.refusedColumns);
      }),
      loading: new Set(),
      // Loads what it holds, then ends its pool once its loads are done.
      async close() {
        held.release(id, warehouse);
        await Promise.allSettled([...warehouse.loading]);
        await warehouse.loader.close().catch((error) => logger.warn({ err: error, destinationId: id }, "closing a warehouse pool failed"));
      },
    };
    return warehouse;
  }

  function load(warehouse: Warehouse, batch: Array<HeldCall<Waiting, AttemptResult[]>>): Promise<void> {
    const attemptedAt = clock.now();
    const started = performance.now();
    // One transaction, one batch attempt for its calls (a call the fallback refused carries its own outcome and error).
    const operation = { id: randomUUID(), calls: batch.length };
    const work = warehouse.loader
      .load(batch.map(({ item: { job, body } }) => ({ payload: body, receivedAt: job.receivedAt, sentAt: job.sentAt ?? undefined })))
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
              url: warehouse.label,
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
    warehouse.loading.add(work);
    void work.finally(() => warehouse.loading.delete(work));
    return work;
  }

  return {
    openDestinations: () => warehouses.destinations(),
    reconcile: (current) => warehouses.reconcile(current),
    deliver(job, destination, body) {
      const warehouse = warehouses.get(destination.id, destination.revision, () => destination.postgres);
      return held.add(destination.id, warehouse, limits, { job, body });
    },
    inFlightLimit: () => batchSize * 2,
    batchWindow: () => ({ calls: batchSize, waitMs: config.flushMs }),
    label: (destination) => labelOf(destination.postgres),
    span: (destination) => ({
      name: "load",
      attributes: {
        "db.system.name": "postgresql",
        "db.namespace": destination.postgres.schema,
        "server.address": hostOf(destination.postgres.url),
      },
    }),
    tick() {
      held.tick();
      void warehouses.sweep();
    },
    flush: () => held.flush(),
    async close() {
      await held.close();
      await warehouses.close();
    },
  };
}

const labelOf = (settings: PostgresSettings) => `${maskPostgresUrl(settings.url)}#${settings.schema}`;

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return "";
  }
}
