import { enqueueCte, notifyIfQueued, orderingKeySql } from "../job-table/index.js";
import type { Queryable } from "../pool.js";

/** A call read from an archive, to replay (its fields as stored in `messages`). */
export interface CallToReplay {
  sourceId: string;
  messageId: string;
  type: string;
  userId: string | null;
  receivedAt: Date;
  payload: string;
}

/**
 * Of these calls (source, messageId), those the job has not seen yet, now
 * marked seen in the caller's transaction (the page's, which also moves the
 * job's cursor): a call is replayed at most once per job however often it is
 * read. Returns their indexes in `calls`.
 */
export async function markReplaySeen(
  tx: Queryable,
  jobId: string,
  calls: ReadonlyArray<{ sourceId: string; messageId: string }>,
): Promise<Set<number>> {
  if (calls.length === 0) return new Set();
  const result = await tx.query<{ position: string }>(
    `WITH page AS (
       SELECT * FROM unnest($2::uuid[], $3::text[]) WITH ORDINALITY AS p (source_id, message_id, position)
     ), inserted AS (
       INSERT INTO archive_replay_seen (job_id, source_id, message_id)
       SELECT DISTINCT $1::uuid, source_id, message_id FROM page
       ON CONFLICT DO NOTHING
       RETURNING source_id, message_id
     )
     -- A call twice in one page: only its first reading counts.
     SELECT min(p.position)::text AS position FROM page p JOIN inserted i USING (source_id, message_id)
      GROUP BY p.source_id, p.message_id`,
    [jobId, calls.map((c) => c.sourceId), calls.map((c) => c.messageId)],
  );
  return new Set(result.rows.map((r) => Number(r.position) - 1));
}

/**
 * Stores the calls again where `messages` no longer has them (same source,
 * messageId and received_at; the body as archived), tagged with the job.
 * `log_xid` is left NULL: a destination on the call log reads calls by it,
 * and a replay is for one destination, not for every destination of the
 * source (the archive would otherwise archive its own replay). A call still
 * stored is left as it is (ON CONFLICT, the ingest's own dedupe key); the
 * caller queues it all the same.
 */
export async function storeReplayedCalls(tx: Queryable, jobId: string, calls: readonly CallToReplay[]): Promise<number> {
  if (calls.length === 0) return 0;
  const result = await tx.query(
    `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload, log_xid, replay_job)
     SELECT s, m, t, u, r, p, NULL, $1::uuid
       FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[]) AS c (s, m, t, u, r, p)
        -- A source deleted since it was archived keeps no calls.
      WHERE EXISTS (SELECT 1 FROM sources WHERE id = c.s)
     ON CONFLICT (source_id, message_id) DO NOTHING`,
    [
      jobId,
      calls.map((c) => c.sourceId),
      calls.map((c) => c.messageId),
      calls.map((c) => c.type),
      calls.map((c) => c.userId),
      calls.map((c) => c.receivedAt),
      calls.map((c) => c.payload),
    ],
  );
  return result.rowCount ?? 0;
}

/**
 * Queues one delivery to the destination for each call (by source and
 * messageId, stored: storeReplayedCalls first), in the order given, whether
 * or not it had a delivery there before: a replay sends again what it is
 * asked to. Returns how many were queued.
 */
export async function enqueueReplayedCalls(
  tx: Queryable,
  destinationId: string,
  calls: ReadonlyArray<{ sourceId: string; messageId: string }>,
  at: Date,
): Promise<number> {
  if (calls.length === 0) return 0;
  const result = await tx.query<{ created: number }>(
    `WITH page AS (
       SELECT * FROM unnest($3::uuid[], $4::text[]) WITH ORDINALITY AS p (source_id, message_id, position)
     ), ${enqueueCte(`SELECT $1::uuid, m.id, m.source_id, $2::timestamptz, $2::timestamptz,
              ${orderingKeySql("m.user_id", "(m.payload::json ->> 'anonymousId')")}
         FROM page p JOIN messages m ON m.source_id = p.source_id AND m.message_id = p.message_id
        WHERE m.type <> 'delete'
        ORDER BY p.position`)}
     SELECT (SELECT count(*)::int FROM queued) AS created, ${notifyIfQueued()}`,
    [destinationId, at, calls.map((c) => c.sourceId), calls.map((c) => c.messageId)],
  );
  return result.rows[0]!.created;
}

/** A replay's seen calls, no longer needed once it is done (the job's row takes the rest with it when purged). */
export async function forgetReplaySeen(tx: Queryable, jobId: string): Promise<void> {
  await tx.query("DELETE FROM archive_replay_seen WHERE job_id = $1", [jobId]);
}

/** The ids of a destination's sources now (a replay reads only their calls). */
export async function selectDestinationSourceIds(db: Queryable, destinationId: string): Promise<string[]> {
  const result = await db.query<{ source_id: string }>("SELECT source_id FROM destination_sources WHERE destination_id = $1", [
    destinationId,
  ]);
  return result.rows.map((r) => r.source_id);
}
