import { countBackfillCandidates, selectBackfillCandidates } from "../queries/backfill-candidates.js";
import { selectDelivery } from "../queries/deliveries.js";
import { selectDestinationBacklogs } from "../queries/destination-backlog.js";
import { lockHealthRows, takeExpiredReports } from "../queries/destination-health.js";
import type { readFinishFeed, searchDeliveries } from "../queries/delivery-search.js";
import { searchFates } from "../queries/fate-search.js";
import { selectCallDeliveryIds, selectLogAttempts, selectLogDelivery, selectLogMessageDeliveries } from "../queries/log-deliveries.js";
import { readFinishFeedAndLog, searchDeliveriesAndLog } from "../queries/log-delivery-search.js";
import { selectLogStats } from "../queries/log-delivery-stats.js";
import type { Queryable } from "../pool.js";
import { storeMessages } from "./store-messages.js";
import { enqueueBackfillPage } from "./backfill.js";
import { cancelDestinationDeliveries } from "./cancel.js";
import { claimDeliveries } from "./claim.js";
import { completeDeliveries } from "./complete.js";
import { expirePausedDeliveries } from "./expire.js";
import { extendLeases } from "./extend.js";
import { analyzeJobTableIfStale, purgeOldMessages, readQueueActivity, vacuumJobTableIfNeeded } from "./purge.js";
import { recordRefusedCompletion } from "./refuse.js";
import { countReplayable, replayBatch } from "./replay-bulk.js";
import { replayDelivery } from "./replay.js";

/**
 * The job table's statements that differ between one Postgres and Citus,
 * behind one interface (River's drivers): the process picks one at start
 * from the database's catalogs (db/citus/open-job-table.ts) and passes it
 * down; nothing else asks which database it is on. Both build their state
 * changes with fence.ts; the Citus driver sends each one to a single shard
 * (one destination, or the destinations of one shard, per statement).
 * Signatures are the single-node functions' own, so a caller changes only
 * where it gets them from. test/db/job-table/driver-contract/ holds both
 * drivers to the same expectations.
 */
export interface JobTableDriver {
  claimDeliveries: typeof claimDeliveries;
  extendLeases: typeof extendLeases;
  completeDeliveries: typeof completeDeliveries;
  recordRefusedCompletion: typeof recordRefusedCompletion;
  cancelDestinationDeliveries: typeof cancelDestinationDeliveries;
  expirePausedDeliveries: typeof expirePausedDeliveries;
  replayDelivery: typeof replayDelivery;
  replayBatch: typeof replayBatch;
  enqueueBackfillPage: typeof enqueueBackfillPage;
  purgeOldMessages: typeof purgeOldMessages;
  readQueueActivity: typeof readQueueActivity;
  vacuumJobTableIfNeeded: typeof vacuumJobTableIfNeeded;
  analyzeJobTableIfStale: typeof analyzeJobTableIfStale;
  /** Ingest: messages stored and routed to their deliveries in one transaction. */
  storeMessages: typeof storeMessages;
  /** Endpoint health's rows, locked for a completion batch (on Citus, one statement per row's shard). */
  lockHealthRows: typeof lockHealthRows;
  /**
   * First in a transaction that changes rows on many shards and then a
   * table every node holds (a deletion, an audience sync): on Citus the
   * shards are then reached one after the other; on one Postgres nothing.
   */
  reachShardsSequentially(tx: Queryable): Promise<void>;
  /**
   * Whether destinations may read calls from the call log by cursor
   * (db/call-log/): one Postgres. On Citus every destination stays per
   * call (a transaction id is each node's own, so no order across shards).
   */
  callLog: boolean;
  reads: JobTableReads;
}

/**
 * The reads of the job table with a Citus form: those that join deliveries
 * to their messages (on Citus, in separate statements: they are on
 * different shards) or read every shard at once.
 */
export interface JobTableReads {
  selectDelivery: typeof selectDelivery;
  searchDeliveries: typeof searchDeliveries;
  readFinishFeed: typeof readFinishFeed;
  /** The calls a destination got no delivery for. */
  searchFates: typeof searchFates;
  /** Taken, not only read: each report goes to one process. */
  takeExpiredReports: typeof takeExpiredReports;
  selectDestinationBacklogs: typeof selectDestinationBacklogs;
  countReplayable: typeof countReplayable;
  countBackfillCandidates: typeof countBackfillCandidates;
  selectBackfillCandidates: typeof selectBackfillCandidates;
  /**
   * The deliveries derived from the call log (db/queries/log-deliveries.ts),
   * where destinations can be on it: absent on Citus, where the log is off.
   * searchDeliveries and readFinishFeed merge them in themselves.
   */
  log?: LogDeliveryReads;
}

/** The reads of deliveries derived from the call log that callers make beside the per-call ones. */
export interface LogDeliveryReads {
  selectDelivery: typeof selectLogDelivery;
  selectAttempts: typeof selectLogAttempts;
  selectCallDeliveryIds: typeof selectCallDeliveryIds;
  selectMessageDeliveries: typeof selectLogMessageDeliveries;
  selectStats: typeof selectLogStats;
}

/** The single-Postgres driver: the job table's own statements, as they are. */
export const singleNodeJobTable: JobTableDriver = {
  claimDeliveries,
  extendLeases,
  completeDeliveries,
  recordRefusedCompletion,
  cancelDestinationDeliveries,
  expirePausedDeliveries,
  replayDelivery,
  replayBatch,
  enqueueBackfillPage,
  purgeOldMessages,
  readQueueActivity,
  vacuumJobTableIfNeeded,
  analyzeJobTableIfStale,
  storeMessages,
  lockHealthRows,
  reachShardsSequentially: async () => {},
  callLog: true,
  reads: {
    selectDelivery,
    // With the derived deliveries of destinations on the call log merged in.
    searchDeliveries: searchDeliveriesAndLog,
    readFinishFeed: readFinishFeedAndLog,
    searchFates,
    takeExpiredReports,
    selectDestinationBacklogs,
    countReplayable,
    countBackfillCandidates,
    selectBackfillCandidates,
    log: {
      selectDelivery: selectLogDelivery,
      selectAttempts: selectLogAttempts,
      selectCallDeliveryIds,
      selectMessageDeliveries: selectLogMessageDeliveries,
      selectStats: selectLogStats,
    },
  },
};
