import type { DeliveryStatus } from "../job-table/delivery-completion.js";

// The rows delivery reads return and the options of a search: shared by the
// single-node reads (deliveries.ts, delivery-search.ts) and their Citus
// forms (job-table/citus/delivery-reads.ts).

export interface DeliveryRow {
  id: string;
  destination_id: string;
  source_id: string;
  message_id: string;
  type: string;
  status: DeliveryStatus;
  attempt_count: number;
  created_at: Date;
  first_attempt_at: Date | null;
  run_at: Date;
  finalized_at: Date | null;
  /** The stored body. */
  payload: string;
  user_id: string | null;
  /** The body the last attempt sent, when the destination's rules changed it. */
  sent_body: string | null;
}

/** A delivery row with what searches add: the keyset positions of both orders. */
export interface SearchRow extends DeliveryRow {
  /** created_at as Postgres prints it (microseconds kept, unlike a JS Date). */
  cursor_at: string;
  finished_xid: string | null;
}

export interface SearchOptions {
  /** The last row of the previous page. */
  before?: { createdAt: string; id: string } | undefined;
  limit: number;
}
