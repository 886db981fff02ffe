import type { JobTableLayout } from "../citus/layout.js";
import { countBackfillCandidates, selectBackfillCandidates } from "../queries/backfill-candidates.js";
import { lockHealthRows } from "../queries/destination-health.js";
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
 * from the database's layout and passes it down. Both build their state
 * changes with fence.ts; the Citus driver sends each one to a single shard
 * (one destination, or the destinations of one shard, per statement).
 * Signatures are the single-node functions' own, so a caller changes only
 * where it gets them from.
 */
export interface JobTableDriver {
  readonly layout: JobTableLayout;
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
  /** Reads that join deliveries to their messages (on Citus, in separate statements: they are on different shards). */
  countReplayable: typeof countReplayable;
  countBackfillCandidates: typeof countBackfillCandidates;
  selectBackfillCandidates: typeof selectBackfillCandidates;
  /** Endpoint health's rows, locked for a completion batch (on Citus, one statement per row's shard). */
  lockHealthRows: typeof lockHealthRows;
}

/** The single-Postgres driver: the job table's own statements, as they are. */
export const singleNodeJobTable: JobTableDriver = {
  layout: "postgres",
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
  countReplayable,
  countBackfillCandidates,
  selectBackfillCandidates,
  lockHealthRows,
};
