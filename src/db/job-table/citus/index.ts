import { enqueueBackfillPage } from "../backfill.js";
import { cancelDestinationDeliveries } from "../cancel.js";
import type { JobTableDriver } from "../driver.js";
import { purgeOldMessages } from "../purge.js";
import { recordRefusedCompletion } from "../refuse.js";
import { countBackfillCandidatesOnCitus, selectBackfillCandidatesOnCitus } from "./backfill-candidates.js";
import { selectDeliveryOnCitus, searchDeliveriesOnCitus } from "./delivery-reads.js";
import { selectDestinationBacklogsOnCitus } from "./destination-backlogs.js";
import { takeExpiredReportsOnCitus } from "./expired-reports.js";
import { searchFatesOnCitus } from "./fate-search.js";
import { readFinishFeedOnCitus } from "./finish-feed.js";
import { reachShardsSequentiallyOnCitus } from "./sequential-shards.js";
import { createCitusClaim } from "./claim.js";
import { completeDeliveriesOnCitus } from "./complete.js";
import { countReplayableOnCitus } from "./count-replayable.js";
import { expirePausedDeliveriesOnCitus } from "./expire.js";
import { extendLeasesOnCitus } from "./extend.js";
import { behindFinishBarrier } from "./finish-barrier.js";
import { lockHealthRowsOnCitus } from "./health-rows.js";
import { replayBatchOnCitus } from "./replay-bulk.js";
import { replayDeliveryOnCitus } from "./replay.js";
import { storeMessagesOnCitus } from "./store-messages.js";
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
  callLog: false,
  claimDeliveries: createCitusClaim(),
  extendLeases: extendLeasesOnCitus,
  // Every change that moves deliveries into the history holds the finish
  // feed's barrier (finish-barrier.ts).
  completeDeliveries: behindFinishBarrier(completeDeliveriesOnCitus),
  recordRefusedCompletion: behindFinishBarrier(recordRefusedCompletion),
  cancelDestinationDeliveries: behindFinishBarrier(cancelDestinationDeliveries),
  expirePausedDeliveries: behindFinishBarrier(expirePausedDeliveriesOnCitus),
  replayDelivery: replayDeliveryOnCitus,
  replayBatch: replayBatchOnCitus,
  enqueueBackfillPage,
  // One form for both layouts: the candidates, less those still queued (a
  // separate read: messages and the queue are not colocated), then removed
  // with everything hanging off them (message-removal.ts).
  purgeOldMessages,
  readQueueActivity: readQueueActivityOnCitus,
  vacuumJobTableIfNeeded: vacuumJobTableIfNeededOnCitus,
  analyzeJobTableIfStale: analyzeJobTableIfStaleOnCitus,
  // Routed in the process and stored in one transaction: messages, their
  // de-duplication keys and their deliveries are in three colocation groups.
  storeMessages: storeMessagesOnCitus,
  lockHealthRows: lockHealthRowsOnCitus,
  reachShardsSequentially: reachShardsSequentiallyOnCitus,
  // Each read keeps to one colocation group per statement: deliveries first,
  // then their messages by id, put together in the process.
  reads: {
    selectDelivery: selectDeliveryOnCitus,
    searchDeliveries: searchDeliveriesOnCitus,
    readFinishFeed: readFinishFeedOnCitus,
    searchFates: searchFatesOnCitus,
    takeExpiredReports: takeExpiredReportsOnCitus,
    selectDestinationBacklogs: selectDestinationBacklogsOnCitus,
    countReplayable: countReplayableOnCitus,
    countBackfillCandidates: countBackfillCandidatesOnCitus,
    selectBackfillCandidates: selectBackfillCandidatesOnCitus,
  },
};
