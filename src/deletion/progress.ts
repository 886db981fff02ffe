import type { Clock } from "../clock.js";
import {
  type FrozenLakeProgress,
  markCompleted,
  selectDeletionRequest,
  selectNotificationProgress,
  type DeletionRequestRow,
} from "../db/queries/deletion-requests.js";
import { selectLakeDeletionProgress } from "../db/queries/lake-deletion-jobs.js";
import type { Queryable } from "../db/pool.js";

/** The lake jobs of a request together: how many, how many ended done or not, and what they did. */
export interface LakeProgress extends FrozenLakeProgress {
  lakesDone: number;
}

export interface DeletionProgress {
  row: DeletionRequestRow;
  delivered: number;
  failed: number;
  lakes: LakeProgress;
  /** Set once every notification is final and every lake job has ended. */
  completedAt: Date | undefined;
}

/**
 * A deletion request with the progress of its notifications, read from the
 * current status of their deliveries: delivered; failed (failed, expired or
 * cancelled — final without having arrived); the rest still pending or
 * retrying; and of its lake jobs (lake-deletion-job.ts), read from their
 * rows. Once no notification is open and no lake job runs the request is
 * complete, and its figures are frozen on its row, because the retention
 * purge later deletes the notification messages with their deliveries, and
 * ended jobs.
 *
 * A notification whose delivery no longer exists (its source was deleted, or
 * it was purged before anyone asked) counts as final but neither delivered
 * nor failed; complete_time is then the time of the last final delivery or
 * lake job still known, or the time completion was observed.
 */
export async function readDeletionProgress(db: Queryable, clock: Clock, id: string): Promise<DeletionProgress | undefined> {
  const row = await selectDeletionRequest(db, id);
  if (!row) return undefined;
  if (row.completed_at) return frozen(row);
  const progress = await selectNotificationProgress(db, id);
  const lake = await selectLakeDeletionProgress(db, id);
  const { running, lastFinishedAt, ...lakeFigures } = lake;
  const lakes: LakeProgress = { ...lakeFigures, lakesDone: lake.lakes - lake.running - lake.lakesFailed };
  if (progress.open > 0 || running > 0) {
    return { row, delivered: progress.delivered, failed: progress.failed, lakes, completedAt: undefined };
  }
  const lastFinal = latest(progress.lastFinalizedAt, lastFinishedAt);
  const completedAt = lastFinal ?? (Number(row.notifications_total) === 0 && lake.lakes === 0 ? row.created_at : clock.now());
  const updated = await markCompleted(db, id, {
    completedAt,
    delivered: progress.delivered,
    failed: progress.failed,
    lakes: lakeFigures,
  });
  return frozen(updated ?? row);
}

function latest(a: Date | null, b: Date | null): Date | null {
  if (!a) return b;
  if (!b) return a;
  return a > b ? a : b;
}

const noLakes: FrozenLakeProgress = { lakes: 0, lakesFailed: 0, filesScanned: 0, filesRewritten: 0, filesDeleted: 0, rowsDeleted: 0 };

function frozen(row: DeletionRequestRow): DeletionProgress {
  // A request completed before lakes were deleted from has no lake figures: it had no lake jobs.
  const lakes = { ...noLakes, ...(row.lake_progress ?? {}) };
  return {
    row,
    delivered: Number(row.notifications_delivered ?? 0),
    failed: Number(row.notifications_failed ?? 0),
    lakes: { ...lakes, lakesDone: lakes.lakes - lakes.lakesFailed },
    completedAt: row.completed_at ?? undefined,
  };
}
