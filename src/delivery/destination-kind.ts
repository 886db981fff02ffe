import type { AttemptResult, ClaimedDelivery } from "../db/job-table/index.js";
import type { DestinationConfigRow } from "../db/queries/destinations.js";

/**
 * A kind of destination: what the delivery loop hands a claimed delivery
 * to once it is due and its destination is enabled. A kind only delivers
 * and reports; the loop, the scheduler, leases, the retry schedule, the
 * circuit breaker, stats and replays act on the attempts it reports, the
 * same for every kind. (Its settings are checked by the admin API before
 * they are stored: src/api/destination-kinds.ts.)
 */
export interface DestinationKind {
  /**
   * Delivers one call and resolves with its attempts once its outcome is
   * known: one attempt per request for webhooks; for a batching kind, one
   * attempt when its batch commits or fails. An attempt's outcome is
   * `success`, `retryable` (retried on the normal schedule) or `permanent`
   * (failed, with its error). It never rejects. `body` is the call as the
   * destination's rules shaped it (fields dropped, transformed): what the
   * kind delivers, rather than the stored `job.payload`.
   */
  deliver(job: ClaimedDelivery, destination: DestinationConfigRow, body: string): Promise<AttemptResult[]>;
  /**
   * How many of this destination's deliveries the loop hands over at once
   * (in flight here); undefined: the configured per-destination concurrency.
   * A batching kind asks for a batch's worth, since it holds them until it loads.
   */
  inFlightLimit?(destination: DestinationConfigRow): number | undefined;
  /** Each turn of the loop: work due by time (a batch's flush interval), by the injectable clock. */
  tick?(): void;
  /** Delivers everything held now without waiting for its time (on stop, or when settling). */
  flush?(): void;
  /** Delivers what it holds, then releases its resources (connections, pools). */
  close(): Promise<void>;
}
