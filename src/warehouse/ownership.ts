import pg from "pg";
import { qualified } from "./identifiers.js";
import { discardsTable } from "./layout.js";
import { errorText } from "./retryable.js";

/**
 * The comment Waypost puts on every table it makes in a warehouse. A schema
 * holding a table without it holds tables Waypost did not make, and is
 * refused: a write key must not be able to add columns to someone else's tables.
 */
export const tableMarker = "Made by Waypost (a warehouse destination loads it).";

/** The discards table: a value that could not be stored in its column, where it came from, and why. */
export function discardsTableSql(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${qualified(schema, discardsTable)} (
    table_name text NOT NULL, column_name text NOT NULL, row_id text NOT NULL, user_id text, value text,
    reason text NOT NULL, received_at timestamptz, loaded_at timestamptz,
    PRIMARY KEY (table_name, row_id, column_name))`;
}

/** A string as an SQL literal (for COMMENT, which takes no parameters). */
export function quoteLiteral(text: string): string {
  if (text.includes("\u0000")) throw new Error("literal contains a NUL character");
  return `'${text.replace(/'/g, "''")}'`;
}

/** Which database a connection is in: the cluster (its system identifier, else its start time) and the database's name. */
export interface DatabaseIdentity {
  database: string;
  systemId: string | null;
  startedAt: string;
}

interface Queryable {
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

export async function databaseIdentity(db: Queryable): Promise<DatabaseIdentity> {
  const base = await db.query<{ database: string; started_at: string }>(
    "SELECT current_database() AS database, pg_postmaster_start_time()::text AS started_at",
  );
  // pg_control_system() is executable by everyone unless an administrator revoked it.
  const system = await db
    .query<{ id: string }>("SELECT system_identifier::text AS id FROM pg_control_system()")
    .then((r) => r.rows[0]?.id ?? null)
    .catch(() => null);
  return { database: base.rows[0]!.database, systemId: system, startedAt: base.rows[0]!.started_at };
}

/** A database's identity, asked once (and again after a failure). */
export function cachedIdentity(db: Queryable): () => Promise<DatabaseIdentity> {
  let identity: Promise<DatabaseIdentity> | undefined;
  return () => {
    identity ??= databaseIdentity(db).catch((error: unknown) => {
      identity = undefined;
      throw error;
    });
    return identity;
  };
}

/** Whether two connections are in the same database of the same cluster, whatever their URLs say. */
export function sameDatabase(a: DatabaseIdentity, b: DatabaseIdentity): boolean {
  if (a.database !== b.database) return false;
  return a.systemId !== null && b.systemId !== null ? a.systemId === b.systemId : a.startedAt === b.startedAt;
}

export const ownDatabaseProblem = "is Waypost's own database: a warehouse must be another database";

/** Up to `limit` tables (and views) of a schema that Waypost did not make; none for a missing or empty schema. */
export async function foreignTables(db: Queryable, schema: string, limit = 5): Promise<string[]> {
  const result = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
        AND coalesce(obj_description(c.oid, 'pg_class'), '') <> $2
      ORDER BY 1 LIMIT $3`,
    [schema, tableMarker, limit],
  );
  return result.rows.map((r) => r.name);
}

/** What a save-time look at a warehouse found. */
export type WarehouseCheck =
  | { ok: true }
  | { ok: false; field: "url" | "schema"; reason: string }
  /** The warehouse did not answer: nothing could be checked (the loader checks again before it loads). */
  | { ok: "unreachable"; reason: string };

/**
 * Connects to a warehouse once (bounded in time) and checks it is not
 * Waypost's own database and that its schema holds no table Waypost did not make.
 */
export async function checkWarehouse(url: string, schema: string, own: DatabaseIdentity, timeoutMs = 5_000): Promise<WarehouseCheck> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    statement_timeout: timeoutMs,
    application_name: "waypost-warehouse-check",
  });
  client.on("error", () => {});
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    return { ok: "unreachable", reason: errorText(error) };
  }
  try {
    if (sameDatabase(await databaseIdentity(client), own)) return { ok: false, field: "url", reason: ownDatabaseProblem };
    const foreign = await foreignTables(client, schema);
    if (foreign.length > 0) {
      return {
        ok: false,
        field: "schema",
        reason: `schema ${JSON.stringify(schema)} holds tables Waypost did not make (${foreign.join(", ")}${foreign.length === 5 ? ", …" : ""}): use a new or empty schema`,
      };
    }
    return { ok: true };
  } catch (error) {
    return { ok: "unreachable", reason: errorText(error) };
  } finally {
    await client.end().catch(() => {});
  }
}
