/**
 * The job table: `delivery_queue` (deliveries being worked) and
 * `delivery_history` (finished ones, partitioned by day; the view
 * `deliveries` shows both). Every change of a row's state is one module
 * here, and goes through the one lease fence (fence.ts):
 *
 *   enqueue          a new delivery starts pending (the CTE every producer uses)
 *   claim            due deliveries take a lease, within rate limits and per-user order
 *   extend           the holder's heartbeat
 *   complete         the holder's results, only while its lease holds
 *   refuse           a result the database refused: retried, failed after a few
 *   cancel, expire   a deleted or paused destination's deliveries (revoke the lease)
 *   replay           a delivery due again now; in bulk, batch by batch
 *   backfill         a page of stored calls queued for a destination
 *   days, purge      day partitions; messages past retention; VACUUM
 *   notify           the channel that wakes the delivery loops
 *   message-removal  deleted messages' deliveries, attempts and fates
 *   ordering-keys    queued deliveries keyed when per-user ordering is turned on
 *   driver           what differs between one Postgres and Citus, writes and
 *                    reads, behind one interface; citus/ is the Citus driver
 *
 * Deleting messages removes their deliveries in the same transaction
 * (message-removal.ts), so a completion in flight then matches no row.
 */
export type { AttemptOutcome, AttemptResult, BatchAttemptRef, SentRequest } from "./attempt-result.js";
export { cancelDestinationDeliveries } from "./cancel.js";
export { claimDeliveries, type ClaimedDelivery, type ClaimOptions, type ClaimResult } from "./claim.js";
export { extendLeases, type HeldLease } from "./extend.js";
export { completeDeliveries } from "./complete.js";
export type { DeliveryCompletion, DeliveryStatus } from "./delivery-completion.js";
export { recordRefusedCompletion, type RefusedCompletion } from "./refuse.js";
export { enqueueCte, notifyIfQueued, orderingKeySql } from "./enqueue.js";
export { enqueueBackfillPage, lockDestinationBackfills, type BackfillPageResult } from "./backfill.js";
export { expirePausedDeliveries } from "./expire.js";
export { deliveriesChannel, wakeWorkers } from "./notify.js";
export { analyzeJobTableIfStale, purgeOldMessages, readQueueActivity, type QueueActivity, vacuumJobTableIfNeeded } from "./purge.js";
export { createDayPartitions, dropDaysBefore, type DroppedDay } from "./days.js";
export { replayDelivery } from "./replay.js";
export {
  countReplayable,
  countReplayableQuery,
  replayBatch,
  replayBatchQuery,
  type BulkReplay,
  type ReplayBatch,
  type ReplayCounts,
  type ReplayPosition,
} from "./replay-bulk.js";
export { and, byMessage, filterPredicates, Params, type DeliveryFilter, type Query } from "./filter.js";
export {
  routingCondition,
  rowWithPayload,
  storeMessages,
  webhooksIntegrationName,
  type HeldBackReason,
  type MessageToStore,
  type StoreResult,
} from "./store-messages.js";
export { singleNodeJobTable, type JobTableDriver, type JobTableReads, type LogDeliveryReads } from "./driver.js";
export { citusJobTable } from "./citus/index.js";
export { removeMessages, removeSourceMessages } from "./message-removal.js";
export { keyQueuedDeliveries } from "./ordering-keys.js";
export { settledFinishSnapshot } from "./citus/finish-barrier.js";
export { batchRowId } from "./completion-records.js";
export { callOrderingKey, routedTo } from "./citus/route-calls.js";
export { logExceptionCtes } from "./fence.js";
export { heldDestinationsSql } from "./claim-circuit.js";
