import { inTransaction, type Queryable } from "../pool.js";
import { type KindColumns, type RoutingColumn, routingColumnsSql } from "./destinations.js";

export type JobKind = "backfill" | "retry" | "lake_deletion";
export type JobState = "running" | "done" | "cancelled" | "failed";

/** A background job's row; params, cursor and progress are the kind's own JSON. */
export interface JobRow {
  id: string;
  kind: JobKind;
  destination_id: string;
  state: JobState;
  params: Record<string, unknown>;
  cursor: Record<string, unknown> | null;
  progress: Record<string, number>;
  error: string | null;
  failures: number;
  lease_id: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

const columns = `id, kind, destination_id, state, params, cursor, progress, error, failures, lease_id,
  created_at, updated_at, finished_at`;

export interface NewJob {
  id: string;
  kind: JobKind;
  destinationId: string;
  params: Record<string, unknown>;
  progress: Record<string, number>;
  /** A job with nothing to do starts (and ends) done. */
  state: "running" | "done";
  at: Date;
}

/*
 * Every change of a job's state is in this file. A job starts running (or
 * done, with nothing to do); its lease holder moves it on a page at a time
 * and ends it (done, cancelled when its destination is gone, failed after
 * repeated errors); anyone may cancel it while it runs. The holder's writes
 * are fenced by its lease token, so a process whose lease ran out (and was
 * taken over) cannot write over its successor.
 */

export async function insertJob(db: Queryable, job: NewJob): Promise<JobRow> {
  const result = await db.query<JobRow>(
    `INSERT INTO background_jobs (id, kind, destination_id, state, params, progress, created_at, updated_at, finished_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7, CASE WHEN $4 = 'running' THEN NULL ELSE $7::timestamptz END)
     RETURNING ${columns}`,
    [job.id, job.kind, job.destinationId, job.state, job.params, job.progress, job.at],
  );
  return result.rows[0]!;
}

/**
 * Serialises BackfillDestination requests of one destination, for the rest
 * of the transaction: of two asked at once, the second sees the first's job.
 */
export async function lockBackfillRequests(tx: Queryable, destinationId: string): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock(hashtext('waypost-backfill-request:' || $1::text))", [destinationId]);
}

/** What a new backfill is asked to cover. */
export interface BackfillAsk {
  destinationId: string;
  /** The destination's settings revision now. */
  revision: number;
  since: Date;
  until: Date;
  /** A replay's archive lake (absent: a backfill of retained calls). */
  fromArchive?: string | undefined;
}

/**
 * The running backfill (oldest first) that covers what `ask` asks for: of
 * the same destination, asked for at the same settings revision (the rules
 * it applies are the same), and whose range starts at or before `since` and
 * ends at or after `until`, or reaches up to the moment it was asked (calls
 * received after that were routed as they arrived, by the same rules), and
 * that reads from the same place (the retained calls, or the same archive).
 */
export async function selectCoveringBackfill(db: Queryable, ask: BackfillAsk): Promise<JobRow | undefined> {
  const result = await db.query<JobRow>(
    `SELECT ${columns} FROM background_jobs
      WHERE destination_id = $1 AND kind = 'backfill' AND state = 'running'
        AND params->>'revision' = $2::text
        AND (params->>'since')::timestamptz <= $3
        AND ((params->>'until')::timestamptz >= $4 OR (params->>'until')::timestamptz >= created_at)
        -- A replay covers only the same archive's replay, and a backfill only a backfill.
        AND coalesce(params->>'fromArchive', '') = $5
      ORDER BY created_at LIMIT 1`,
    [ask.destinationId, ask.revision, ask.since, ask.until, ask.fromArchive ?? ""],
  );
  return result.rows[0];
}

export async function selectJob(db: Queryable, kind: JobKind, id: string): Promise<JobRow | undefined> {
  const result = await db.query<JobRow>(`SELECT ${columns} FROM background_jobs WHERE id = $1 AND kind = $2`, [id, kind]);
  return result.rows[0];
}

/** A destination's jobs of one kind, newest first. */
export async function listJobs(db: Queryable, kind: JobKind, destinationId: string, limit: number): Promise<JobRow[]> {
  const result = await db.query<JobRow>(
    `SELECT ${columns} FROM background_jobs WHERE destination_id = $1 AND kind = $2 ORDER BY created_at DESC, id LIMIT $3`,
    [destinationId, kind, limit],
  );
  return result.rows;
}

/**
 * Takes the lease of the oldest running job nobody holds (never leased, its
 * lease ran out, or released), with a new token, among destinations none of
 * whose jobs is held: a destination's jobs run one at a time (its
 * backfill pages would wait for each other anyway), so a burst on one
 * destination takes one lane and other destinations' jobs run beside it.
 * Claims are made one at a time (a transaction lock) so that two processes
 * never both take a job of one destination. SKIP LOCKED: a job whose page
 * is being written (its row locked) is someone's.
 */
export async function claimJob(db: Queryable, token: string, now: Date, leaseMs: number): Promise<JobRow | undefined> {
  return inTransaction(db, async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('waypost-job-claim'))");
    const result = await tx.query<JobRow>(
      `UPDATE background_jobs SET lease_id = $1, lease_until = $2::timestamptz + $3::int * interval '1 millisecond', updated_at = $2
        WHERE id = (SELECT j.id FROM background_jobs j
                     WHERE j.state = 'running' AND (j.lease_until IS NULL OR j.lease_until <= $2)
                       AND NOT EXISTS (SELECT 1 FROM background_jobs held
                                        WHERE held.destination_id = j.destination_id AND held.state = 'running'
                                          AND held.lease_id IS NOT NULL AND held.lease_until > $2)
                     ORDER BY j.created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING ${columns}`,
      [token, now, leaseMs],
    );
    return result.rows[0];
  });
}

/** The holder's heartbeat; false when the job is no longer its own (taken over, cancelled, ended). */
export async function extendJobLease(db: Queryable, id: string, token: string, now: Date, leaseMs: number): Promise<boolean> {
  const result = await db.query(
    `UPDATE background_jobs SET lease_until = $3::timestamptz + $4::int * interval '1 millisecond'
      WHERE id = $1 AND lease_id = $2 AND state = 'running'`,
    [id, token, now, leaseMs],
  );
  return (result.rowCount ?? 0) > 0;
}

/**
 * The job as its holder last committed it, without a lock (the work of a
 * page done before its transaction reads its cursor here); undefined when
 * it is no longer the holder's.
 */
export async function selectHeldJob(db: Queryable, id: string, token: string): Promise<JobRow | undefined> {
  const result = await db.query<JobRow>(`SELECT ${columns} FROM background_jobs WHERE id = $1 AND lease_id = $2 AND state = 'running'`, [
    id,
    token,
  ]);
  return result.rows[0];
}

/**
 * Locks the job's row for a page of work, inside the page's transaction:
 * undefined when it is no longer the holder's (cancelled meanwhile, or taken
 * over), and the page must then do nothing. The lock makes a cancel wait for
 * the page to commit, and the page wait for a cancel.
 */
export async function lockJobForPage(db: Queryable, id: string, token: string): Promise<JobRow | undefined> {
  const result = await db.query<JobRow>(
    `SELECT ${columns} FROM background_jobs WHERE id = $1 AND lease_id = $2 AND state = 'running' FOR UPDATE`,
    [id, token],
  );
  return result.rows[0];
}

export interface PageWrite {
  cursor: Record<string, unknown>;
  progress: Record<string, number>;
  now: Date;
  leaseMs: number;
}

/** A page's cursor and counters, in the transaction that wrote its work (after lockJobForPage); the lease runs on. */
export async function savePage(db: Queryable, id: string, token: string, page: PageWrite): Promise<void> {
  await db.query(
    `UPDATE background_jobs SET cursor = $3, progress = $4, failures = 0, updated_at = $5,
            lease_until = $5::timestamptz + $6::int * interval '1 millisecond'
      WHERE id = $1 AND lease_id = $2 AND state = 'running'`,
    [id, token, page.cursor, page.progress, page.now, page.leaseMs],
  );
}

/** The holder ends its job: done, or cancelled when its destination is gone. */
export async function endJob(
  db: Queryable,
  id: string,
  token: string,
  end: { state: "done" | "cancelled" | "failed"; error?: string; now: Date },
): Promise<boolean> {
  const result = await db.query(
    `UPDATE background_jobs SET state = $3, error = $4, finished_at = $5, updated_at = $5, lease_id = NULL, lease_until = NULL
      WHERE id = $1 AND lease_id = $2 AND state = 'running'`,
    [id, token, end.state, end.error ?? null, end.now],
  );
  return (result.rowCount ?? 0) > 0;
}

/**
 * A page failed (the database away, say): the error is kept, the lease is
 * given up so that the job is tried again after `retryMs` (here or
 * elsewhere), and after `maxFailures` in a row the job fails with it.
 */
export async function recordJobFailure(
  db: Queryable,
  id: string,
  token: string,
  failure: { error: string; now: Date; retryMs: number; maxFailures: number },
): Promise<JobState | undefined> {
  const result = await db.query<{ state: JobState }>(
    `UPDATE background_jobs
        SET failures = failures + 1, error = $3, updated_at = $4, lease_id = NULL,
            state = CASE WHEN failures + 1 >= $6::int THEN 'failed' ELSE state END,
            finished_at = CASE WHEN failures + 1 >= $6::int THEN $4::timestamptz ELSE NULL END,
            lease_until = CASE WHEN failures + 1 >= $6::int THEN NULL ELSE $4::timestamptz + $5::int * interval '1 millisecond' END
      WHERE id = $1 AND lease_id = $2 AND state = 'running'
      RETURNING state`,
    [id, token, failure.error.slice(0, 1024), failure.now, failure.retryMs, failure.maxFailures],
  );
  return result.rows[0]?.state;
}

/** The holder stops (a shutdown) without ending the job: another process may take it at once. */
export async function releaseJob(db: Queryable, id: string, token: string): Promise<void> {
  await db.query("UPDATE background_jobs SET lease_id = NULL, lease_until = NULL WHERE id = $1 AND lease_id = $2 AND state = 'running'", [
    id,
    token,
  ]);
}

/**
 * Cancels a running job (anyone may): its holder's next page finds it so and
 * stops; a page being written commits first. Returns the job as it is now
 * (an ended one unchanged), undefined when there is no such job.
 */
export async function cancelJob(db: Queryable, kind: JobKind, id: string, now: Date): Promise<JobRow | undefined> {
  const result = await db.query<JobRow>(
    `WITH cancelled AS (
       UPDATE background_jobs SET state = 'cancelled', error = 'cancelled on request', finished_at = $3, updated_at = $3,
              lease_id = NULL, lease_until = NULL
        WHERE id = $1 AND kind = $2 AND state = 'running'
        RETURNING ${columns}
     )
     SELECT ${columns} FROM cancelled
     UNION ALL
     SELECT ${columns} FROM background_jobs WHERE id = $1 AND kind = $2 AND NOT EXISTS (SELECT 1 FROM cancelled)`,
    [id, kind, now],
  );
  return result.rows[0];
}

/** The routing rules a backfill applies, as stored: the common ones, and its kind's (its routing column, if any). */
export interface BackfillRulesRow extends Partial<Pick<KindColumns, RoutingColumn>> {
  filter: Record<string, unknown> | null;
  consent_categories: string[];
  require_consent: boolean;
  kind: string;
}

/**
 * Whether the destination still exists, taking a key-share lock on its row
 * for the rest of the transaction: a DeleteDestination (which locks the row
 * for update) then either committed before (the answer is false, and no
 * delivery may be queued for it) or waits until this transaction commits
 * (and then cancels what it queued). Updates of the destination are not held up.
 */
export async function lockDestinationIfExists(db: Queryable, destinationId: string): Promise<BackfillRulesRow | undefined> {
  const result = await db.query<BackfillRulesRow>(
    `SELECT d.filter, d.consent_categories, d.require_consent, d.kind${routingColumnsSql("d")}
       FROM destinations d WHERE d.id = $1 FOR KEY SHARE`,
    [destinationId],
  );
  return result.rows[0];
}

/** Deletes jobs that ended before `cutoff` (retention): a running job is kept however old. Returns how many. */
export async function purgeEndedJobs(db: Queryable, cutoff: Date): Promise<number> {
  const result = await db.query("DELETE FROM background_jobs WHERE state <> 'running' AND finished_at < $1", [cutoff]);
  return result.rowCount ?? 0;
}
