import { storeMessages } from "../../queries/store-messages.js";
import { enqueueBackfillPage } from "../backfill.js";
import { cancelDestinationDeliveries } from "../cancel.js";
import type { JobTableDriver } from "../driver.js";
import { purgeOldMessages } from "../purge.js";
import { recordRefusedCompletion } from "../refuse.js";
import { countBackfillCandidatesOnCitus, selectBackfillCandidatesOnCitus } from "./backfill-candidates.js";
import { createCitusClaim } from "./claim.js";
import { completeDeliveriesOnCitus } from "./complete.js";
import { countReplayableOnCitus } from "./count-replayable.js";
import { expirePausedDeliveriesOnCitus } from "./expire.js";
import { extendLeasesOnCitus } from "./extend.js";
import { lockHealthRowsOnCitus } from "./health-rows.js";
import { replayBatchOnCitus } from "./replay-bulk.js";
import { replayDeliveryOnCitus } from "./replay.js";
import { analyzeJobTableIfStaleOnCitus, readQueueActivityOnCitus, vacuumJobTableIfNeededOnCitus } from "./queue-activity.js";

/**
 * The job table on Citus, distributed by destination: every hot statement
 * is the single-node one filtered to one destination, so Citus sends it to
 * the one shard holding that destination's rows (its queue, history,
 * attempts, rate bucket and health). Statements that already name one
 * destination in every reference (cancel, refuse) are the single-node
 * ones as they are; so is a backfill page (its read of the page's messages
 * Citus plans apart from the destination's shard).
 *
 * The claim and the heartbeat are each one router task. A statement that
 * moves rows into the history or writes attempts (INSERT ... SELECT in a
 * CTE: the completion, cancel, refuse, expiry, replay) Citus cannot ship
 * whole: it runs its steps one after another, each a single-shard task on
 * the same worker, in one distributed transaction, passing what they return
 * through the coordinator.
 */
export const citusJobTable: JobTableDriver = {
  layout: "citus",
  claimDeliveries: createCitusClaim(),
  extendLeases: extendLeasesOnCitus,
  completeDeliveries: completeDeliveriesOnCitus,
  recordRefusedCompletion,
  cancelDestinationDeliveries,
  expirePausedDeliveries: expirePausedDeliveriesOnCitus,
  replayDelivery: replayDeliveryOnCitus,
  replayBatch: replayBatchOnCitus,
  enqueueBackfillPage,
  // TODO(citus): message deletion without the messages trigger is being
  // rewritten (purgeOldMessagesOnCitus); the single-node purge until then,
  // which Citus refuses (its anti-join is correlated).
  purgeOldMessages,
  readQueueActivity: readQueueActivityOnCitus,
  vacuumJobTableIfNeeded: vacuumJobTableIfNeededOnCitus,
  analyzeJobTableIfStale: analyzeJobTableIfStaleOnCitus,
  // TODO(citus): storeMessagesOnCitus (src/db/job-table/citus/store-messages.ts,
  // written beside this driver) replaces this once merged: the single-node
  // store relies on the unique (source_id, message_id) that Citus drops.
  storeMessages,
  countReplayable: countReplayableOnCitus,
  countBackfillCandidates: countBackfillCandidatesOnCitus,
  selectBackfillCandidates: selectBackfillCandidatesOnCitus,
  lockHealthRows: lockHealthRowsOnCitus,
};
