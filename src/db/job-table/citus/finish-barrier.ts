import type pg from "pg";
import { inTransaction, type Queryable } from "../../pool.js";

// On Citus a finished delivery's finished_xid is the id of the coordinator's
// transaction that finished it (Citus evaluates the history's default
// there: a finish's INSERT ... SELECT passes through the coordinator), so
// the coordinator's snapshots order and bound finishes as one Postgres's do,
// and the finish feed pages by them. One gap is left by two-phase commit:
// the coordinator commits its own transaction before it sends COMMIT
// PREPARED to the workers, so a snapshot taken in between counts a finish
// as done whose rows the workers do not show yet, and the feed would pass
// it by. Every finishing transaction therefore holds this advisory lock
// shared until it has ended everywhere (Citus sends COMMIT PREPARED in its
// commit callback, which runs before a transaction's locks are released),
// and a feed read takes it exclusively for a moment to take its snapshot:
// every finish visible in that snapshot is then visible on the workers too.
const finishBarrier = "hashtext('waypost finish feed')";

/**
 * `finish` run in a transaction (the caller's, or its own on a pool) that
 * holds the finish barrier shared: for every job-table change on Citus
 * that moves deliveries into the history.
 */
export function behindFinishBarrier<A extends unknown[], R>(
  finish: (db: Queryable, ...args: A) => Promise<R>,
): (db: Queryable, ...args: A) => Promise<R> {
  return (db, ...args) =>
    inTransaction(db, async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock_shared(${finishBarrier})`);
      return finish(tx, ...args);
    });
}

/** A coordinator snapshot every finish visible in which has committed on every node (the finish feed's bound). */
export async function settledFinishSnapshot(pool: pg.Pool): Promise<string> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query(`SELECT pg_advisory_xact_lock(${finishBarrier})`);
    const snapshot = (await client.query<{ s: string }>("SELECT pg_current_snapshot()::text AS s")).rows[0]!.s;
    await client.query("COMMIT");
    return snapshot;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
