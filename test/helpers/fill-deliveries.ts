import type pg from "pg";

export interface FilledTable {
  sourceId: string;
  destinationIds: string[];
  /** A user with about rows / users messages. */
  userId: string;
  messageId: string;
}

/**
 * Fills the job table with `rows` deliveries (one per message) over `destinations`
 * destinations (in blocks of 100) and 7 days, in plain SQL (generate_series): 90% delivered, 5%
 * failed, 3% expired, 2% pending, each final one with an attempt. Then ANALYZE,
 * so plans are what a real table of that size gets.
 */
export async function fillDeliveries(db: pg.Pool, rows: number, destinations = 20, users = 50_000): Promise<FilledTable> {
  const sourceId = "00000000-0000-4000-8000-00000000000a";
  await db.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 'bulk', 'bulk')", [sourceId]);
  await db.query(
    `INSERT INTO destinations (id, name, enabled, webhooks)
     SELECT ('00000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid, 'd' || i, true, '[{"url":"http://example.com","headers":{}}]'
       FROM generate_series(1, $1) i`,
    [destinations],
  );
  await db.query(
    `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
     SELECT $1, 'm-' || i, 'track', 'user-' || (i % $3), now() - make_interval(secs => ($2 - i) * 604800.0 / $2), '{"type":"track"}'
       FROM generate_series(1, $2) i`,
    [sourceId, rows, users],
  );
  // The days the finished ones fall in have their partitions, as maintenance would have made them.
  await db.query("SELECT waypost_create_day_partitions((now() - interval '8 days')::date, (now() + interval '1 day')::date)");
  const spread = `FROM messages m
      CROSS JOIN LATERAL (SELECT (CASE WHEN m.id % 100 < 90 THEN 'delivered' WHEN m.id % 100 < 95 THEN 'failed'
                                       WHEN m.id % 100 < 98 THEN 'expired' ELSE 'pending' END)::delivery_status AS status) s
      WHERE m.source_id = $1`;
  const destination = "('00000000-0000-4000-8000-' || lpad((m.id / 100 % $2 + 1)::text, 12, '0'))::uuid";
  await db.query(
    `INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count,
                                   lease_token, first_attempt_at, finished_xid)
     SELECT ${destination}, nextval('delivery_ids'), m.id, m.source_id, s.status, m.received_at, m.received_at + interval '1 second', 1,
            1, m.received_at, (3 + m.id / 100)::text::xid8
       ${spread} AND s.status <> 'pending'`,
    [sourceId, destinations],
  );
  await db.query(
    `INSERT INTO delivery_queue (destination_id, message_pk, source_id, status, run_at, created_at, attempt_count, first_attempt_at)
     SELECT ${destination}, m.id, m.source_id, s.status, m.received_at, m.received_at, 1, m.received_at
       ${spread} AND s.status = 'pending'`,
    [sourceId, destinations],
  );
  await db.query(
    `INSERT INTO delivery_attempts (destination_id, delivery_id, attempt, url_index, url, attempted_at, outcome, status_code, latency_ms)
     SELECT destination_id, id, 1, 0, 'http://example.com', finalized_at,
            CASE status WHEN 'delivered' THEN 'success' WHEN 'failed' THEN 'permanent' ELSE 'retryable' END::attempt_outcome,
            CASE status WHEN 'delivered' THEN 200 WHEN 'failed' THEN 400 ELSE 503 END, (id * 7919) % 900 + 10
       FROM delivery_history`,
  );
  await db.query("ANALYZE");
  return {
    sourceId,
    destinationIds: Array.from({ length: destinations }, (_, i) => `00000000-0000-4000-8000-${String(i + 1).padStart(12, "0")}`),
    userId: "user-42",
    messageId: `m-${Math.floor(rows / 2)}`,
  };
}
