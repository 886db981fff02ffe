import type { DeliveryStatus } from "../job-table/index.js";
import type { Queryable } from "../pool.js";

export interface MessageDeliveryRow {
  destination_id: string;
  id: string;
  status: DeliveryStatus;
  attempt_count: number;
}

/** A stored call's deliveries, one per destination that got it (the latest when there are several). */
export async function selectMessageDeliveries(db: Queryable, messagePk: string): Promise<MessageDeliveryRow[]> {
  const result = await db.query<MessageDeliveryRow>(
    `SELECT DISTINCT ON (destination_id) destination_id, id, status, attempt_count FROM deliveries
      WHERE message_pk = $1 ORDER BY destination_id, id DESC`,
    [messagePk],
  );
  return result.rows;
}
