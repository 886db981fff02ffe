import { randomUUID } from "node:crypto";
import type { Queryable } from "../../src/db/pool.js";

/**
 * Rows for the job-table tests of either driver, written straight into the
 * tables (the schema has no triggers: a destination's rate bucket is
 * written here, as the statement creating a destination writes it there).
 */
export async function seedSource(db: Queryable): Promise<string> {
  const id = randomUUID();
  await db.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', $2)", [id, Buffer.from(id)]);
  return id;
}

export interface SeedDestination {
  enabled?: boolean;
  rate?: number;
  ordering?: "none" | "per_user";
  /** Whole tokens in its bucket (rate-limited destinations). */
  tokens?: number;
  /** Its webhook's URL (a loopback receiver). */
  url?: string;
}

export async function seedDestination(db: Queryable, sourceId: string, at: Date, options: SeedDestination = {}): Promise<string> {
  const id = randomUUID();
  await db.query(
    `INSERT INTO destinations (id, name, enabled, webhooks, max_requests_per_second, ordering, created_at, updated_at)
     VALUES ($1, 'hook', $2, json_build_array(json_build_object('url', $6::text, 'headers', '{}'::json)), $3, $4, $5, $5)`,
    [id, options.enabled ?? true, options.rate ?? 0, options.ordering ?? "none", at, options.url ?? "https://example.com/hook"],
  );
  await db.query("INSERT INTO destination_sources (source_id, destination_id) VALUES ($1, $2)", [sourceId, id]);
  await db.query("INSERT INTO destination_rate_buckets (destination_id, tokens, refilled_at) VALUES ($1, $2, $3)", [
    id,
    options.tokens ?? 0,
    at,
  ]);
  return id;
}

/** Stores `users.length` track calls (one per user given) received at `at`; returns their message ids (pks) in order. */
export async function seedMessages(db: Queryable, sourceId: string, at: Date, users: readonly string[]): Promise<string[]> {
  const result = await db.query<{ id: string }>(
    `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
     SELECT $1, gen_random_uuid()::text, 'track', u.user_id, $2, json_build_object('userId', u.user_id, 'n', u.n)::text
       FROM unnest($3::text[]) WITH ORDINALITY AS u(user_id, n)
      ORDER BY u.n
     RETURNING id`,
    [sourceId, at, users],
  );
  return result.rows.map((row) => row.id).sort((a, b) => Number(a) - Number(b));
}

/** Queues a delivery of each message to the destination, due at `runAt`, in the messages' order; returns the delivery ids. */
export async function seedDeliveries(
  db: Queryable,
  destinationId: string,
  messagePks: readonly string[],
  runAt: Date,
  ordered = false,
): Promise<string[]> {
  const ids: string[] = [];
  for (const pk of messagePks) {
    const result = await db.query<{ id: string }>(
      `INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at, ordering_key)
       SELECT $1, m.id, m.source_id, $3, $3, CASE WHEN $4 THEN m.user_id END FROM messages m WHERE m.id = $2
       RETURNING id`,
      [destinationId, pk, runAt, ordered],
    );
    ids.push(result.rows[0]!.id);
  }
  return ids;
}

/** Where a destination's deliveries are: status by id, queue and history together. */
export async function statuses(db: Queryable, destinationId: string): Promise<Map<string, string>> {
  const result = await db.query<{ id: string; status: string }>("SELECT id, status::text FROM deliveries WHERE destination_id = $1", [
    destinationId,
  ]);
  return new Map(result.rows.map((row) => [row.id, row.status]));
}

/** Moves queued deliveries to the history as `status`, finished at `at`, by hand (bypassing the lease fence). */
export async function finishDeliveries(
  db: Queryable,
  destinationId: string,
  ids: readonly string[],
  status: string,
  at: Date,
): Promise<void> {
  await db.query(
    `WITH q AS (DELETE FROM delivery_queue WHERE destination_id = $1 AND id = ANY($2::bigint[]) RETURNING *)
     INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count, lease_token, ordering_key)
     SELECT destination_id, id, message_pk, source_id, $3::delivery_status, created_at, $4, attempt_count, lease_token + 1, ordering_key FROM q`,
    [destinationId, ids, status, at],
  );
}
