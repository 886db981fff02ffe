import type { AttemptResult } from "./attempt-result.js";

// What a processed delivery turned into: written by complete.ts, turned into
// rows by completion-records.ts and read by the filters, so it lives apart.

export type DeliveryStatus = "pending" | "retrying" | "delivered" | "failed" | "expired" | "cancelled";

/** What one processed delivery turned into. */
export interface DeliveryCompletion {
  destinationId: string;
  id: string;
  /** The claim's token: a completion from a lost lease changes nothing. */
  leaseToken: number;
  status: DeliveryStatus;
  /** Next attempt, for retrying; otherwise ignored. */
  runAt: Date;
  /** True when an attempt was made (false: released untouched). */
  attempted: boolean;
  attemptedAt: Date;
  retryUrls: string[] | null;
  attempts: AttemptResult[];
  /** The delivery was claimed as an open circuit's probe (endpoint health reads it). */
  probe?: boolean;
}
