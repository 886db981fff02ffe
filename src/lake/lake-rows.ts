import { changeOf } from "../warehouse/layout.js";
import { Misfit } from "../warehouse/column-types.js";
import { archiveColumns, archiveRow, archiveTable } from "./archive-row.js";
import type { FileContent } from "./file-content.js";
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

/** The rows of one file, one table and one hour, column by column (a FileContent). */
export interface TableBatch extends FileContent {
  table: string;
  partition: Partition;
  /** The columns its rows have, with their settled types, in the order the rows first have them (the layout's fixed ones first). */
  columns: Map<string, LakeType>;
  /** Per column, its value in each row (null: it did not fit; nothing: the row lacks the column). */
  values: Map<string, Array<LakeValue | null | undefined>>;
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

/** A batch being filled: its raw values, and the call each row came from (a misfit is counted against it). */
interface Filling extends TableBatch {
  owners: number[];
}

/**
 * The rows a batch of calls puts into a lake, per table and hour: the tables
 * and columns of the Postgres warehouse layout (src/warehouse/layout.ts),
 * without `users` (a lake is appended to, never merged), plus the `calls`
 * archive. Each call's cells go straight into their columns (nothing per
 * row outlives its call: a page of 10,000 calls stays young garbage);
 * column types are settled with the registry once per table per batch, and
 * then each value is fitted to its column's type: one that does not fit is
 * null and counted against its call.
 */
export async function lakeRows(calls: readonly LakeCall[], registry: ColumnRegistry, options: LakeRowsOptions = {}): Promise<LakeRows> {
  const loadedAt = options.loadedAt ?? new Date();
  const discarded = calls.map(() => 0);
  const skipped: LakeRows["skipped"] = [];
  const batches = new Map<string, Filling>();
  // The type each table's columns would get from this batch alone: the first value seen.
  const proposed = new Map<string, Map<string, LakeType>>();

  const batchOf = (table: string, partition: Partition): Filling => {
    const key = `${table}\u0000${partitionPath(partition)}`;
    let batch = batches.get(key);
    if (!batch) {
      batch = { table, partition, columns: new Map(), values: new Map(), rowCount: 0, owners: [] };
      batches.set(key, batch);
    }
    return batch;
  };
  /** Sets a row's value of a column (a new column of the batch starts with nothing for the rows before). */
  const put = (batch: Filling, row: number, name: string, value: unknown) => {
    let column = batch.values.get(name);
    if (!column) batch.values.set(name, (column = []));
    column[row] = value as LakeValue;
  };

  calls.forEach((call, index) => {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(call.payload);
    } catch {
      skipped.push({ index, reason: "the stored call is not JSON" });
      return;
    }
    const partition = partitionOf(call.receivedAt);
    if (options.archive !== false && typeof body.type === "string") {
      const batch = batchOf(archiveTable, partition);
      const row = batch.rowCount++;
      batch.owners.push(index);
      for (const [name, value] of archiveRow(body, call)) put(batch, row, name, value);
    }
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
    for (const tableRow of change.rows) {
      // An event called `Calls` would share the archive's table: it gets a leading `_`, as the layout's own names do.
      const table = tableRow.table === archiveTable ? `_${archiveTable}` : tableRow.table;
      const batch = batchOf(table, partition);
      const row = batch.rowCount++;
      batch.owners.push(index);
      let types = proposed.get(table);
      if (!types) proposed.set(table, (types = new Map()));
      for (const [name, cell] of tableRow.cells) {
        if (!types.has(name)) types.set(name, lakeTypeOf(cell.type));
        put(batch, row, name, cell.value);
      }
    }
  });

  const settled = new Map<string, Map<string, LakeType>>();
  for (const [table, columns] of proposed) settled.set(table, await registry.settle(table, columns));
  for (const batch of batches.values())
    fitBatch(batch, batch.table === archiveTable ? archiveColumns : settled.get(batch.table)!, discarded);
  return { batches: [...batches.values()].map(({ owners: _, ...batch }) => batch), discarded, skipped };
}

/** Fits each value of the batch to its column's type, in place: a misfit becomes null and counts against its call. */
function fitBatch(batch: Filling, types: ReadonlyMap<string, LakeType>, discarded: number[]): void {
  // The archive's fixed columns, in their order, hold their values as written (archive-row.ts).
  if (batch.table === archiveTable) {
    for (const [name, type] of types) {
      batch.columns.set(name, type);
      if (!batch.values.has(name)) batch.values.set(name, []);
    }
    return;
  }
  // The layout's columns in the order the rows first had them.
  for (const [name, column] of batch.values) {
    const type = types.get(name)!;
    batch.columns.set(name, type);
    for (let row = 0; row < column.length; row++) {
      const value = column[row];
      if (value === undefined || value === null) continue;
      const fitted = fitLakeValue(value, type);
      if (fitted instanceof Misfit) {
        discarded[batch.owners[row]!]!++;
        column[row] = null;
      } else column[row] = fitted;
    }
  }
}
