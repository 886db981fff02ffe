import pg from "pg";
import type { Logger } from "../logger.js";

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

/** What a query function takes: the pool, or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, "query"> | pg.PoolClient;

export interface PoolOptions {
  connectionString: string;
  /** Where an idle connection's failure is reported. */
  logger?: Pick<Logger, "warn">;
  /** Connections at most; the delivery loop and the API share them. */
  max?: number;
  applicationName?: string;
  /**
   * Postgres cancels a statement running longer (error 57014); the same
   * bound applies to waiting for a free connection. Unset: no limit.
   */
  statementTimeoutMs?: number;
}

/** A pg pool; timestamps come back as Date, bigint ids as strings. */
export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 20,
    application_name: options.applicationName ?? "waypost",
    idleTimeoutMillis: 30_000,
    ...(options.statementTimeoutMs
      ? { statement_timeout: options.statementTimeoutMs, connectionTimeoutMillis: options.statementTimeoutMs }
      : {}),
    // Short statements only: JIT compilation never pays for itself here, and
    // the claim's cost estimate grows with the destinations that have due
    // work, which could push it past jit_above_cost (tens of ms per claim).
    options: "-c jit=off",
  });
  // An idle client losing its connection must not crash the process; the
  // pool replaces it on the next checkout. It is logged: it is often the
  // first sign of a database restart or outage.
  pool.on("error", (error) => options.logger?.warn({ err: error }, "an idle database connection failed; the pool replaces it"));
  guardConnectionErrors(pool);
  const clients = new Set<pg.PoolClient>();
  pool.on("connect", (client) => {
    clients.add(client);
    client.once("end", () => clients.delete(client));
  });
  openClients.set(pool, clients);
  return pool;
}

/**
 * Gives each of the pool's connections an error listener of its own for its
 * whole life. pg-pool listens for a connection's errors only while it is
 * idle, and a caller of `pool.connect()` can only listen once its promise
 * resolves. A backend terminated as it starts (a Postgres restart,
 * pg_terminate_backend) sends its ReadyForQuery and its FATAL error in one
 * packet: the first hands the connection to the caller, the second is
 * emitted before the caller can listen, and an error event nobody listens
 * to ends the process. With this listener the connection is marked broken
 * instead: its next statement fails, and the pool discards it on release.
 * Where the error is worth reporting, the pool (idle connections) and
 * withTransaction (checked out) still do.
 */
export function guardConnectionErrors(pool: pg.Pool): void {
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
}

/** Every pool's connections still open, for closePool. */
const openClients = new WeakMap<pg.Pool, Set<pg.PoolClient>>();

/**
 * Ends the pool and waits until each of its connections has closed.
 * pool.end() resolves once it has asked its idle connections to end, not
 * once they have: a Postgres stopped right after (the embedded one, on
 * shutdown) would still find their backends and terminate them, and each
 * would report 57P01 "terminating connection" as a failed idle connection.
 */
export async function closePool(pool: pg.Pool, waitMs = 5_000): Promise<void> {
  const ended = [...(openClients.get(pool) ?? [])].map((client) => new Promise<void>((resolve) => client.once("end", () => resolve())));
  await pool.end();
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, waitMs);
    timer.unref();
  });
  await Promise.race([Promise.all(ended), bound]);
  clearTimeout(timer);
}

/** Whether the database answers (the readiness check). */
export async function ping(db: Queryable): Promise<boolean> {
  return (await db.query("SELECT 1")).rowCount === 1;
}

/** Runs fn in a transaction, rolling back when it throws. */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // The pool listens for a connection's errors only while it is idle: one
  // lost while checked out here (between two statements, say) would be an
  // uncaught exception. The statement fails instead, the client is
  // discarded rather than returned, and the loss is reported where the
  // pool reports an idle one's: most often the connection died idle and
  // was checked out before its end was read.
  let lost: Error | undefined;
  const onError = (error: Error) => {
    lost = error;
    pool.emit("error", error, client);
  };
  client.on("error", onError);
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.off("error", onError);
    client.release(lost);
  }
}

/**
 * Runs fn in a transaction: a pool's own (withTransaction), or the one the
 * caller has open on its client (a client is taken to be in one: its
 * statements and fn's then commit or roll back together).
 */
export async function inTransaction<T>(db: Queryable, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return db instanceof pg.Pool ? withTransaction(db, fn) : fn(db);
}
