import type pg from "pg";
import { type Queryable, withTransaction } from "../pool.js";

/**
 * The history of finished deliveries, the attempts and the batch attempts
 * are partitioned by UTC day (delivery_history_YYYYMMDD,
 * delivery_attempts_YYYYMMDD, delivery_batch_attempts_YYYYMMDD), so that
 * retention drops whole days: a DROP TABLE, whatever the day held, with no
 * DELETE and no vacuum afterwards. Rows of a day without its partition (a
 * clock far off) land in each table's default partition, never refused.
 */

const dayMs = 86_400_000;

function utcDay(time: Date): string {
  return time.toISOString().slice(0, 10);
}

/**
 * Creates the day partitions from `now`'s day to `daysAhead` days later,
 * those missing (the SQL function takes an advisory lock, so processes may
 * call it at once). Returns how many it created.
 */
export async function createDayPartitions(db: Queryable, now: Date, daysAhead: number): Promise<number> {
  const result = await db.query<{ created: number }>("SELECT waypost_create_day_partitions($1::date, $2::date) AS created", [
    utcDay(now),
    utcDay(new Date(now.getTime() + daysAhead * dayMs)),
  ]);
  return result.rows[0]?.created ?? 0;
}

/** A day partition dropped by retention. */
export interface DroppedDay {
  table: string;
  day: string;
}

/**
 * Drops the day partitions that end at or before `cutoff`, and deletes the
 * default partitions' rows older than it (there are normally none).
 *
 * Each day is first detached from its table (a change of the catalog: the
 * parent's lock is held for milliseconds, waiting at most `lockTimeoutMs`
 * for it, since a long read of that day holds it off), then dropped on its
 * own. Dropping frees the day's files, which takes the filesystem about as
 * long as removing files of that size (here about 0.8 s per GB): done
 * while still attached, every completion (an insert into the history)
 * waited that long behind the parent's lock. A day detached but not yet
 * dropped (the process stopped in between) is dropped on the next run. A
 * day not dropped now is dropped on a later run.
 */
export async function dropDaysBefore(db: pg.Pool, cutoff: Date, lockTimeoutMs = 2_000): Promise<DroppedDay[]> {
  const days = await db.query<{ name: string; parent: string; attached: boolean }>(
    `SELECT c.relname AS name, substring(c.relname from '^(delivery_history|delivery_attempts|delivery_batch_attempts)_') AS parent,
            c.relispartition AS attached
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'r' AND n.nspname = current_schema()
        AND c.relname ~ '^(delivery_history|delivery_attempts|delivery_batch_attempts)_[0-9]{8}$'
        AND to_date(right(c.relname, 8), 'YYYYMMDD') + 1 <= ($1::timestamptz AT TIME ZONE 'UTC')::date
      ORDER BY 1`,
    [cutoff],
  );
  const dropped: DroppedDay[] = [];
  for (const { name, parent, attached } of days.rows) {
    try {
      if (attached) {
        await withTransaction(db, async (client) => {
          await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockTimeoutMs))}`);
          await client.query(`ALTER TABLE "${parent}" DETACH PARTITION "${name}"`);
        });
      }
      await db.query(`DROP TABLE IF EXISTS "${name}"`);
      dropped.push({ table: parent, day: name.slice(-8) });
    } catch (error) {
      // lock_not_available: tried again on the next run.
      if ((error as { code?: string }).code !== "55P03") throw error;
    }
  }
  await db.query("DELETE FROM delivery_history_default WHERE finalized_at < $1", [cutoff]);
  await db.query("DELETE FROM delivery_attempts_default WHERE attempted_at < $1", [cutoff]);
  await db.query("DELETE FROM delivery_batch_attempts_default WHERE attempted_at < $1", [cutoff]);
  return dropped;
}
