/**
 * The job table and every change of its rows' state, in one place (River's
 * way). It is two tables: `delivery_queue`, the deliveries being worked
 * (pending, retrying), and `delivery_history`, the finished ones,
 * append-only and partitioned by day like `delivery_attempts`; the view
 * `deliveries` shows both to readers. This index is the only entry point; each operation
 * lives in its own module, and all of them go through the one lease fence
 * (fence.ts):
 *
 *   enqueue   a new delivery starts pending (the CTE every producer uses)
 *   claim     due deliveries of enabled destinations take a lease, within
 *             the destinations' rate limits and per-user ordering (flow-control)
 *   extend    the lease holder's heartbeat: its leases run on, only while they hold
 *   complete  the lease holder's results, only while its lease holds; a
 *             batch operation's attempt written once for its calls
 *             (delivery_batch_attempts), referenced from each delivery
 *   refuse    a result the database refused: counted, retried later, failed
 *             with the database's error after a few
 *   cancel    a deleted destination's unfinished deliveries (revokes the lease)
 *   expire    a paused destination's deliveries past their window (revokes)
 *   replay    a finished or waiting delivery due again now (revokes); in
 *             bulk, the deliveries matching a filter, batch by batch
 *   backfill  a page of stored calls queued for a destination that has no
 *             delivery of them, under a per-destination lock
 *   days      the day partitions: created ahead, dropped past retention
 *   purge     messages past retention; VACUUM the queue when dead rows pile up
 *   notify    the channel that wakes the delivery loops
 *   message-removal  deleted messages' deliveries, attempts and fates
 *   ordering-keys    queued deliveries keyed when per-user ordering is turned on
 *   driver    the operations whose statements differ between one Postgres
 *             and Citus, behind one interface; citus/ holds the Citus
 *             driver (every hot statement filtered to one destination,
 *             so it runs on one shard)
 *
 * A delivery reaching a final state leaves the queue for the history in the
 * statement that finishes it (fence.ts). Deleting messages (purge, a user's
 * data deletion, a source's deletion) removes their deliveries in the same
 * transaction (message-removal.ts); a completion in flight
 * then matches no row.
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
export { singleNodeJobTable, type JobTableDriver, type JobTableReads } from "./driver.js";
export { citusJobTable } from "./citus/index.js";
export { removeMessages, removeSourceMessages } from "./message-removal.js";
export { keyQueuedDeliveries } from "./ordering-keys.js";
export { settledFinishSnapshot } from "./citus/finish-barrier.js";
