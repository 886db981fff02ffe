// What a search of recorded fates asks and returns: shared by the Postgres
// search (fate-search.ts) and its Citus form (citus/fate-search.ts), which
// the first calls: both use these, so they live in neither.

/** A fate recorded when a call was routed (call_fates.fate). */
export type RecordedFate = "filtered" | "disabled" | "integrations_off";

export interface FateSearch {
  destinationId: string;
  fates: readonly RecordedFate[];
  /** With "filtered": "filter", "consent", "subscriptions" or "transform"; undefined: any. */
  reason?: string | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
  /** Rows strictly older than this (recorded_at as Postgres prints it, and message_pk). */
  before?: { recordedAt: string; messagePk: string } | undefined;
  limit: number;
}

export interface FatedCallRow {
  message_pk: string;
  source_id: string;
  message_id: string;
  type: string;
  user_id: string | null;
  received_at: Date;
  /** A track call's event name; null for other types. */
  event: string | null;
  fate: RecordedFate;
  reason: string | null;
  recorded_at: Date;
  /** recorded_at as Postgres prints it, microseconds kept (the page cursor). */
  cursor_at: string;
}
