import pg from "pg";
import { changeOf, type WarehouseChange } from "./layout.js";
import { errorText, isRetryableError } from "./retryable.js";
import { createSchemaState, isStaleSchemaError, type NeededColumns } from "./schema-state.js";
import { batchStatements, deleteStatements } from "./statements.js";

/** One call to load: its stored body (the webhook body) and when Waypost received it. */
export interface WarehouseCall {
  payload: string;
  receivedAt?: Date | undefined;
}

/** What became of one call of a batch. */
export type LoadOutcome = { outcome: "success" } | { outcome: "retryable" | "permanent"; error: string };

export interface WarehouseLoaderOptions {
  /** postgres:// URL of the warehouse. */
  url: string;
  schema: string;
  /** Connections to the warehouse at most (the pool is bounded). */
  maxConnections?: number;
  /** How long a connection attempt may take before the batch is retried later. */
  connectTimeoutMs?: number;
  /** Values stored as NULL because they did not fit their column. */
  onMismatches?: (count: number) => void;
}

export interface WarehouseLoader {
  /** Loads a batch in one transaction; one outcome per call, in order. */
  load(calls: readonly WarehouseCall[]): Promise<LoadOutcome[]>;
  /** Ends the pool. */
  close(): Promise<void>;
}

const success: LoadOutcome = { outcome: "success" };

/** A parsed call of the batch, with its place in it. */
type Item = { index: number; change: WarehouseChange };

/**
 * Loads batches of calls into a Postgres warehouse: the tables and columns
 * they need are made first (short DDL statements of their own, so loading
 * never waits on a long transaction), then the batch is one transaction. If
 * the database refuses the batch for a reason of its own (not an outage),
 * it is loaded again call by call with a savepoint each, so one bad call
 * fails alone.
 */
export function createWarehouseLoader(options: WarehouseLoaderOptions): WarehouseLoader {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.maxConnections ?? 2,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    application_name: "waypost-warehouse",
  });
  // An idle client's error (the warehouse restarted) must not crash the process; the next batch finds out.
  pool.on("error", () => {});
  const { schema } = options;
  const state = createSchemaState({ pool, schema });

  async function transaction(work: (client: pg.PoolClient) => Promise<void>): Promise<void> {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      await work(client);
      await client.query("COMMIT");
      client.release();
    } catch (error) {
      // A connection that failed mid-transaction is not given back to the pool.
      await client.query("ROLLBACK").catch(() => {});
      client.release(isRetryableError(error) ? (error as Error) : undefined);
      throw error;
    }
  }

  async function write(client: pg.ClientBase, changes: readonly WarehouseChange[]): Promise<number> {
    const batch = batchStatements(schema, changes, state);
    for (const statement of batch.statements) await client.query(statement.text, statement.values);
    if (batch.deletedUsers.length > 0) {
      for (const statement of deleteStatements(schema, await state.userTables(client), batch.deletedUsers)) {
        await client.query(statement.text, statement.values);
      }
    }
    return batch.mismatches;
  }

  /** Call by call, each in a savepoint: the refused ones fail, the rest commit together. */
  async function writeOneByOne(items: ReadonlyArray<{ index: number; change: WarehouseChange }>, outcomes: LoadOutcome[]) {
    let mismatches = 0;
    await transaction(async (client) => {
      for (const { index, change } of items) {
        await client.query("SAVEPOINT call");
        try {
          const counted = await write(client, [change]);
          await client.query("RELEASE SAVEPOINT call");
          mismatches += counted;
          outcomes[index] = success;
        } catch (error) {
          if (isRetryableError(error)) throw error;
          await client.query("ROLLBACK TO SAVEPOINT call");
          outcomes[index] = { outcome: "permanent", error: `warehouse refused the call: ${errorText(error)}` };
        }
      }
    });
    if (mismatches > 0) options.onMismatches?.(mismatches);
  }

  /** Makes the tables and columns the calls need, then loads them; returns the calls still in the batch. */
  async function ensureAndWrite(all: Item[], outcomes: LoadOutcome[]): Promise<Item[]> {
    const refused = await state.ensure(neededColumns(all.map((i) => i.change)));
    const items = all.filter(({ index, change }) => {
      const column = refusedColumn(change, refused);
      if (column) outcomes[index] = { outcome: "permanent", error: `warehouse refused column ${column.table}.${column.column}` };
      return !column;
    });
    try {
      let mismatches = 0;
      await transaction(async (client) => {
        mismatches = await write(
          client,
          items.map((i) => i.change),
        );
      });
      if (mismatches > 0) options.onMismatches?.(mismatches);
      for (const { index } of items) outcomes[index] = success;
    } catch (error) {
      if (isRetryableError(error) || isStaleSchemaError(error)) throw error;
      await writeOneByOne(items, outcomes);
    }
    return items;
  }

  return {
    async load(calls) {
      const outcomes: LoadOutcome[] = new Array(calls.length);
      let items: Item[] = [];
      calls.forEach((call, index) => {
        try {
          items.push({ index, change: changeOf(JSON.parse(call.payload) as Record<string, unknown>, call.receivedAt) });
        } catch (error) {
          outcomes[index] = { outcome: "permanent", error: `not a call the warehouse can store: ${errorText(error)}` };
        }
      });
      try {
        try {
          items = await ensureAndWrite(items, outcomes);
        } catch (error) {
          if (!isStaleSchemaError(error)) throw error;
          // Tables dropped in the warehouse since they were made: read the catalog again, once.
          state.reset();
          items = await ensureAndWrite(items, outcomes);
        }
      } catch (error) {
        // The warehouse is away (or went away mid-batch): nothing of the batch is known committed.
        const failed: LoadOutcome = { outcome: "retryable", error: `warehouse unavailable: ${errorText(error)}` };
        for (const { index } of items) outcomes[index] = failed;
      }
      return outcomes;
    },
    close: () => pool.end(),
  };
}

/** Per table, the columns the changes need, each with the type of the first value the batch has for it. */
function neededColumns(changes: readonly WarehouseChange[]): Map<string, NeededColumns> {
  const needed = new Map<string, NeededColumns>();
  for (const change of changes) {
    if (change.kind !== "rows") continue;
    for (const row of [...change.rows, ...(change.user ? [change.user] : [])]) {
      let columns = needed.get(row.table);
      if (!columns) needed.set(row.table, (columns = new Map()));
      for (const [name, cell] of row.cells) if (!columns.has(name)) columns.set(name, cell.type);
    }
  }
  return needed;
}

function refusedColumn(change: WarehouseChange, refused: ReadonlyMap<string, Set<string>>): { table: string; column: string } | undefined {
  if (change.kind !== "rows" || refused.size === 0) return undefined;
  for (const row of [...change.rows, ...(change.user ? [change.user] : [])]) {
    for (const column of row.cells.keys()) if (refused.get(row.table)?.has(column)) return { table: row.table, column };
  }
  return undefined;
}
