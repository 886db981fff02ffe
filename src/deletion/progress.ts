import type { Clock } from "../clock.js";
import {
  markCompleted,
  selectDeletionRequest,
  selectNotificationProgress,
  type DeletionRequestRow,
} from "../db/queries/deletion-requests.js";
import type { Queryable } from "../db/pool.js";

export interface DeletionProgress {
  row: DeletionRequestRow;
  delivered: number;
  failed: number;
  /** Set once every notification is final. */
  completedAt: Date | undefined;
}

/**
 * A deletion request with the progress of its notifications, read from the
 * current status of their deliveries: delivered; failed (failed, expired or
 * cancelled — final without having arrived); the rest still pending or
 * retrying. Once none is open the request is complete, and its figures are
 * frozen on its row, because the retention purge later deletes the
 * notification messages with their deliveries.
 *
 * A notification whose delivery no longer exists (its source was deleted, or
 * it was purged before anyone asked) counts as final but neither delivered
 * nor failed; complete_time is then the time of the last final delivery
 * still known, or the time completion was observed.
 */
export async function readDeletionProgress(db: Queryable, clock: Clock, id: string): Promise<DeletionProgress | undefined> {
  const row = await selectDeletionRequest(db, id);
  if (!row) return undefined;
  if (row.completed_at) return frozen(row);
  const progress = await selectNotificationProgress(db, id);
  if (progress.open > 0) {
    return { row, delivered: progress.delivered, failed: progress.failed, completedAt: undefined };
  }
  const completedAt = progress.lastFinalizedAt ?? (Number(row.notifications_total) === 0 ? row.created_at : clock.now());
  const updated = await markCompleted(db, id, {
    completedAt,
    delivered: progress.delivered,
    failed: progress.failed,
  });
  return frozen(updated ?? row);
}

function frozen(row: DeletionRequestRow): DeletionProgress {
  return {
    row,
    delivered: Number(row.notifications_delivered ?? 0),
    failed: Number(row.notifications_failed ?? 0),
    completedAt: row.completed_at ?? undefined,
  };
}
