import { changeOf, type TableRow } from "../warehouse/layout.js";
import { Misfit } from "../warehouse/column-types.js";
import { archiveRow, archiveTable, archiveColumns } from "./archive-row.js";
import type { ColumnRegistry } from "./column-registry.js";
import { type LakeType, type LakeValue, fitLakeValue, lakeTypeOf } from "./lake-types.js";
import { type Partition, partitionOf, partitionPath } from "./object-keys.js";

/** One stored call to write: its body as stored (the webhook body) and when Waypost received it. */
export interface LakeCall {
  payload: string;
  receivedAt: Date;
  /** When the client sent it, when it said. */
  sentAt?: Date | undefined;
  sourceId?: string | undefined;
}

/** The rows of one file: one table, one hour. */
export interface TableBatch {
  table: string;
  partition: Partition;
  /** The columns its rows have, with their settled types, in the order the rows first have them (the layout's fixed ones first). */
  columns: Map<string, LakeType>;
  rows: Array<Map<string, LakeValue | null>>;
}

export interface LakeRows {
  /** One entry per table and hour, the archive table's included. */
  batches: TableBatch[];
  /** Per call (by index): values written as null because they did not fit their column's type. */
  discarded: number[];
  /** Calls that make no rows, with why (not JSON, no messageId, a delete notification). */
  skipped: Array<{ index: number; reason: string }>;
}

export interface LakeRowsOptions {
  /** The `loaded_at` of every row (default: now). */
  loadedAt?: Date;
  /** Write each call whole into the `calls` table (default true). */
  archive?: boolean;
  /** Write each call into the warehouse layout's tables (default true). */
  layout?: boolean;
}

/**
 * The rows a batch of calls puts into a lake, per table and hour: the tables
 * and columns of the Postgres warehouse layout (src/warehouse/layout.ts),
 * without `users` (a lake is appended to, never merged), plus the `calls`
 * archive. Column types are settled with the registry once per table per
 * batch; a value that does not fit its column is null and counted.
 */
export async function lakeRows(calls: readonly LakeCall[], registry: ColumnRegistry, options: LakeRowsOptions = {}): Promise<LakeRows> {
  const loadedAt = options.loadedAt ?? new Date();
  const discarded = calls.map(() => 0);
  const skipped: LakeRows["skipped"] = [];
  // What each call puts where, before any type is settled.
  const pending: Array<{ index: number; partition: Partition; row: TableRow }> = [];
  const archive: Array<{ partition: Partition; row: Map<string, LakeValue | null> }> = [];
  // The type each table's columns would get from this batch alone: the first value seen.
  const proposed = new Map<string, Map<string, LakeType>>();

  calls.forEach((call, index) => {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(call.payload);
    } catch {
      skipped.push({ index, reason: "the stored call is not JSON" });
      return;
    }
    const partition = partitionOf(call.receivedAt);
    if (options.archive !== false && typeof body.type === "string") archive.push({ partition, row: archiveRow(body, call) });
    if (options.layout === false) return;
    let change: ReturnType<typeof changeOf>;
    try {
      change = changeOf(body, call.receivedAt, { sentAt: call.sentAt, loadedAt });
    } catch (error) {
      skipped.push({ index, reason: (error as Error).message });
      return;
    }
    if (change.kind === "delete") {
      skipped.push({ index, reason: "a delete notification: lake files are never rewritten" });
      return;
    }
    for (const row of change.rows) {
      // An event called `Calls` would share the archive's table: it gets a leading `_`, as the layout's own names do.
      const table = row.table === archiveTable ? `_${archiveTable}` : row.table;
      pending.push({ index, partition, row: { table, cells: row.cells } });
      let columns = proposed.get(table);
      if (!columns) proposed.set(table, (columns = new Map()));
      for (const [name, cell] of row.cells) if (!columns.has(name)) columns.set(name, lakeTypeOf(cell.type));
    }
  });

  const settled = new Map<string, Map<string, LakeType>>();
  for (const [table, columns] of proposed) settled.set(table, await registry.settle(table, columns));

  const batches = new Map<string, TableBatch>();
  const batchOf = (table: string, partition: Partition): TableBatch => {
    const key = `${table}\u0000${partitionPath(partition)}`;
    let batch = batches.get(key);
    if (!batch) {
      batch = { table, partition, columns: new Map(), rows: [] };
      batches.set(key, batch);
    }
    return batch;
  };

  for (const { index, partition, row } of pending) {
    const types = settled.get(row.table)!;
    const batch = batchOf(row.table, partition);
    const values = new Map<string, LakeValue | null>();
    for (const [name, cell] of row.cells) {
      const type = types.get(name)!;
      if (!batch.columns.has(name)) batch.columns.set(name, type);
      const fitted = fitLakeValue(cell.value, type);
      if (fitted instanceof Misfit) {
        discarded[index]!++;
        values.set(name, null);
      } else values.set(name, fitted);
    }
    batch.rows.push(values);
  }
  for (const { partition, row } of archive) {
    const batch = batchOf(archiveTable, partition);
    if (batch.columns.size === 0) for (const [name, type] of archiveColumns) batch.columns.set(name, type);
    batch.rows.push(row);
  }
  return { batches: [...batches.values()], discarded, skipped };
}
