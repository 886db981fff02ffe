import type { Queryable } from "../pool.js";

export interface LastAttemptRow {
  delivery_id: string;
  outcome: "success" | "retryable" | "permanent" | "abandoned";
  status_code: number | null;
  error: string | null;
}

/**
 * Each delivery's last attempt (with several webhooks, its first failed
 * request if any), through the attempts' primary key: a page of the basic
 * view shows what went wrong without reading every attempt.
 */
export async function selectLastAttempts(
  db: Queryable,
  destinationIds: readonly string[],
  deliveryIds: readonly string[],
): Promise<LastAttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  const result = await db.query<LastAttemptRow>(
    `SELECT DISTINCT ON (delivery_id) delivery_id, outcome, status_code, error
       FROM delivery_attempts
      WHERE (destination_id, delivery_id) IN (SELECT * FROM unnest($1::uuid[], $2::bigint[]))
      ORDER BY delivery_id, attempt DESC, outcome = 'success', url_index`,
    [destinationIds, deliveryIds],
  );
  return result.rows;
}
