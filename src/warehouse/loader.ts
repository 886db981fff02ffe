import pg from "pg";
import { guardConnectionErrors } from "../db/pool.js";
import { changeOf, discardsTable, type WarehouseChange } from "./layout.js";
import { type DatabaseIdentity, databaseIdentity, ownDatabaseProblem, sameDatabase } from "./ownership.js";
import { errorText, isRetryableError } from "./retryable.js";
import { createSchemaState, isStaleSchemaError, type NeededColumns } from "./schema-state.js";
import { postgresUrlProblem } from "./settings.js";
import { batchStatements, type Discard, deleteStatements } from "./statements.js";

/** One call to load: its stored body (the webhook body) and when Waypost received it. */
export interface WarehouseCall {
  payload: string;
  receivedAt?: Date | undefined;
  /** When the client sent it (its `sentAt`), when it said. */
  sentAt?: Date | undefined;
}

/** What became of one call of a batch. */
export type LoadOutcome =
  /** `discarded`: values of the call not stored in their columns (kept in the discards table), `note` says which. */
  { outcome: "success"; discarded?: number; note?: string } | { outcome: "retryable" | "permanent"; error: string };

/** Values of a batch not stored in their columns: of a mismatched type (stored NULL), or for a column that could not be added. */
export interface DiscardCounts {
  typeMismatches: number;
  refusedColumns: number;
}

export interface WarehouseLoaderOptions {
  /** postgres:// URL of the warehouse. */
  url: string;
  schema: string;
  /** Connections to the warehouse at most (the pool is bounded). */
  maxConnections?: number;
  /** How long a connection attempt may take before the batch is retried later. */
  connectTimeoutMs?: number;
  /** Columns per table at most (default 1,000; Postgres's own limit is 1,600). */
  maxColumns?: number;
  /** Told after each committed batch that discarded values. */
  onDiscards?: (counts: DiscardCounts) => void;
  /** Waypost's own database, which the warehouse must not be (checked once before the first load). */
  ownDatabase?: () => Promise<DatabaseIdentity>;
  /** The load time (tests); the wall clock by default. */
  now?: () => Date;
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
  // Settings saved before the URL's parameters were checked are checked here, before anything connects.
  const urlProblem = postgresUrlProblem(options.url);
  if (urlProblem) {
    const refused: LoadOutcome = { outcome: "permanent", error: `warehouse URL ${urlProblem}` };
    return { load: async (calls) => calls.map(() => refused), close: async () => {} };
  }
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.maxConnections ?? 2,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    application_name: "waypost-warehouse",
  });
  // An idle client's error (the warehouse restarted) must not crash the process; the next batch finds out.
  pool.on("error", () => {});
  // A connection lost while a batch's transaction holds it fails that batch, not the process.
  guardConnectionErrors(pool);
  const { schema } = options;
  const state = createSchemaState({ pool, schema, maxColumns: options.maxColumns ?? 1_000 });
  const now = options.now ?? (() => new Date());
  let checkedOwnership = options.ownDatabase === undefined;

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

  async function write(client: pg.ClientBase, changes: readonly WarehouseChange[]): Promise<Discard[]> {
    const batch = batchStatements(schema, changes, state);
    for (const statement of batch.statements) await client.query(statement.text, statement.values);
    if (batch.deletedUsers.length > 0) {
      for (const statement of deleteStatements(schema, await state.userTables(client), batch.deletedUsers)) {
        await client.query(statement.text, statement.values);
      }
    }
    return batch.discards;
  }

  /** Marks each call's outcome a success, with what of it was discarded; tells the counts. */
  function succeed(items: readonly Item[], discards: readonly Discard[], outcomes: LoadOutcome[]) {
    const byOrigin = new Map<number, Discard[]>();
    for (const d of discards) {
      let list = byOrigin.get(d.origin);
      if (!list) byOrigin.set(d.origin, (list = []));
      list.push(d);
    }
    items.forEach(({ index }, position) => {
      const own = byOrigin.get(position);
      outcomes[index] = own ? { outcome: "success", discarded: own.length, note: discardNote(own) } : success;
    });
    if (discards.length > 0) {
      const typeMismatches = discards.filter((d) => d.kind === "type").length;
      options.onDiscards?.({ typeMismatches, refusedColumns: discards.length - typeMismatches });
    }
  }

  /** Call by call, each in a savepoint: the refused ones fail, the rest commit together. */
  async function writeOneByOne(items: readonly Item[], outcomes: LoadOutcome[]) {
    const written: Array<{ item: Item; discards: Discard[] }> = [];
    await transaction(async (client) => {
      for (const item of items) {
        const { index, change } = item;
        await client.query("SAVEPOINT call");
        try {
          const discards = await write(client, [change]);
          await client.query("RELEASE SAVEPOINT call");
          written.push({ item, discards });
        } catch (error) {
          if (isRetryableError(error)) throw error;
          await client.query("ROLLBACK TO SAVEPOINT call");
          outcomes[index] = { outcome: "permanent", error: `warehouse refused the call: ${errorText(error)}` };
        }
      }
    });
    succeed(
      written.map((w) => w.item),
      written.flatMap((w, position) => w.discards.map((d) => ({ ...d, origin: position }))),
      outcomes,
    );
  }

  /** Makes the tables and columns the calls need, then loads them; returns the calls still in the batch. */
  async function ensureAndWrite(items: Item[], outcomes: LoadOutcome[]): Promise<Item[]> {
    await state.ensure(neededColumns(items.map((i) => i.change)));
    try {
      let discards: Discard[] = [];
      await transaction(async (client) => {
        discards = await write(
          client,
          items.map((i) => i.change),
        );
      });
      succeed(items, discards, outcomes);
    } catch (error) {
      if (isRetryableError(error) || isStaleSchemaError(error)) throw error;
      await writeOneByOne(items, outcomes);
    }
    return items;
  }

  /** Whether the warehouse is Waypost's own database (asked once per pool, before its first load). */
  async function isOwnDatabase(): Promise<boolean> {
    if (checkedOwnership) return false;
    const [own, warehouse] = await Promise.all([options.ownDatabase!(), databaseIdentity(pool)]);
    if (sameDatabase(own, warehouse)) return true;
    checkedOwnership = true;
    return false;
  }

  return {
    async load(calls) {
      const outcomes: LoadOutcome[] = new Array(calls.length);
      let items: Item[] = [];
      const loadedAt = now();
      calls.forEach((call, index) => {
        try {
          const body = JSON.parse(call.payload) as Record<string, unknown>;
          items.push({ index, change: changeOf(body, call.receivedAt, { sentAt: call.sentAt, loadedAt }) });
        } catch (error) {
          outcomes[index] = { outcome: "permanent", error: `not a call the warehouse can store: ${errorText(error)}` };
        }
      });
      try {
        if (items.length > 0 && (await isOwnDatabase())) {
          for (const { index } of items) outcomes[index] = { outcome: "permanent", error: `warehouse URL ${ownDatabaseProblem}` };
          return outcomes;
        }
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

/** What an attempt says about a call's discarded values, grouped by reason (at most 1 KB). */
function discardNote(discards: readonly Discard[]): string {
  const byReason = new Map<string, string[]>();
  for (const d of discards) {
    const reason = d.kind === "type" ? `value ${d.reason}, stored NULL` : d.reason;
    let columns = byReason.get(reason);
    if (!columns) byReason.set(reason, (columns = []));
    columns.push(`${d.table}.${d.column}`);
  }
  const groups = [...byReason].map(([reason, columns]) => {
    const more = columns.length > 3 ? ` and ${columns.length - 3} more` : "";
    return `${columns.slice(0, 3).join(", ")}${more}: ${reason}`;
  });
  const count = discards.length === 1 ? "1 value not stored in its column" : `${discards.length} values not stored in their columns`;
  return `${count}, kept in ${discardsTable}: ${groups.join("; ")}`.slice(0, 1024);
}
