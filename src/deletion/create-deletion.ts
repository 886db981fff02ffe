import { randomUUID } from "node:crypto";
import type pg from "pg";
import { InvalidInputError } from "../errors.js";
import type { Clock } from "../clock.js";
import { withTransaction } from "../db/pool.js";
import { queueDeleteNotifications } from "../db/queries/deletion-notifications.js";
import { insertDeletionRequest, setNotificationsTotal } from "../db/queries/deletion-requests.js";
import { deleteUserAudienceState, deleteUserMessages, lockAffectedSources } from "../db/queries/deletion-user-data.js";
import { insertLakeDeletionJobs } from "../db/queries/lake-deletion-jobs.js";
import { buildDeletePayload } from "../ingest/payload.js";
import type { JobTableDriver } from "../db/job-table/index.js";
import { forgetPerson } from "./forget-person.js";

export interface CreateDeletionOptions {
  pool: pg.Pool;
  clock: Clock;
  /** The job table's driver: it says how the transaction reaches the shards. */
  jobTable: JobTableDriver;
  /** How long after a lake's flush window its deletion job starts (default lakeDeletionStartDelayMs). */
  lakeStartDelayMs?: number;
  /** Whether identity resolution keeps profiles (default true): then the whole person is forgotten. */
  identity?: boolean;
}

/**
 * A lake's deletion job waits its flush window and then this long: a flush
 * in flight when the request committed (its calls read from the log before
 * they were deleted) is held at most the window and then uploaded, and its
 * files must be there for the job to find. Two minutes covers an upload's
 * retries at the store's request timeout.
 */
export const lakeDeletionStartDelayMs = 120_000;

export interface DeletionInput {
  /** Validated: the identifier's value. */
  userId: string;
  /** "user_id" (absent: that), "anonymous_id" or an operator's type (validated against the rules). */
  identifierType?: string;
  /** Validated, lower-case, unique; empty means every source. */
  sourceIds: string[];
  /** The position of each id in the request, for error messages (`sourceIds[2]`). */
  sourceIndexes: number[];
}

export interface CreatedDeletion {
  id: string;
  sourceIds: string[];
  messagesDeleted: number;
  membershipsDeleted: number;
  notificationsTotal: number;
  /** Lake destinations whose files a background job rewrites without the user's rows. */
  lakeJobs: number;
  createdAt: Date;
}

/**
 * Carries out a deletion request in ONE transaction, so either all of it
 * happens or none of it:
 * 1. the affected sources are resolved and locked against deletion;
 * 2. the user's stored messages go, with their deliveries (undelivered and
 *    history) and attempts;
 * 3. the user's audience memberships and computed-trait values go;
 * 4. the request is recorded;
 * 5. one delete notification per affected source with an enabled
 *    destination is stored, with one delivery per enabled destination,
 *    linked to the request; the delivery loop is woken at commit.
 * 6. one background job per lake destination of the affected sources is
 *    stored, to rewrite its files without the user's rows (lake-deletion-job.ts);
 *    it starts after the lake's flush window (lakeDeletionStartDelayMs).
 * Steps 2 and 3 come before 5, so the new notifications are never deleted.
 */
export async function createDeletion(options: CreateDeletionOptions, input: DeletionInput): Promise<CreatedDeletion> {
  const id = randomUUID();
  return withTransaction(options.pool, async (tx) => {
    // Messages go from every shard, then audience rows (reference tables) change.
    await options.jobTable.reachShardsSequentially(tx);
    const { found, missing } = await lockAffectedSources(tx, input.sourceIds);
    if (missing.length > 0) {
      const index = input.sourceIndexes[input.sourceIds.indexOf(missing[0]!)]!;
      throw new InvalidInputError(`sourceIds[${index}]`, `unknown source ${JSON.stringify(missing[0])}`);
    }
    const createdAt = options.clock.now();
    // The whole person: every userId of the profile holding the identifier, and every call resolved to it.
    const identifierType = input.identifierType ?? "user_id";
    const person =
      options.identity === false
        ? { userIds: [input.userId], messagesDeleted: 0 }
        : await forgetPerson(tx, { identifierType, userId: input.userId }, found, createdAt);
    let messagesDeleted = person.messagesDeleted;
    let membershipsDeleted = 0;
    let notificationsTotal = 0;
    let lakeJobs = 0;
    for (const userId of person.userIds) {
      messagesDeleted += await deleteUserMessages(tx, found, userId);
      membershipsDeleted += await deleteUserAudienceState(tx, found, userId);
    }
    await insertDeletionRequest(tx, { id, userId: input.userId, identifierType, sourceIds: found, messagesDeleted, createdAt });
    for (const userId of person.userIds) {
      notificationsTotal += await queueDeleteNotifications(tx, {
        deletionRequestId: id,
        sourceIds: found,
        userId,
        payload: buildDeletePayload(userId, createdAt),
        at: createdAt,
      });
      lakeJobs += await insertLakeDeletionJobs(tx, {
        deletionRequestId: id,
        userId,
        sourceIds: found,
        at: createdAt,
        startDelayMs: options.lakeStartDelayMs ?? lakeDeletionStartDelayMs,
      });
    }
    await setNotificationsTotal(tx, id, notificationsTotal);
    return { id, sourceIds: found, messagesDeleted, membershipsDeleted, notificationsTotal, lakeJobs, createdAt };
  });
}
