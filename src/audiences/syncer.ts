import type pg from "pg";
import { NotFoundError } from "../errors.js";
import type { Clock } from "../clock.js";
import { applySync, markSynced, type ApplySyncResult } from "../db/queries/audience-apply-sync.js";
import { selectAudience, type AudienceKindName } from "../db/queries/audience-rows.js";
import { analyzeStage, createStage, dropStage, profilesToUsers, stageChunk } from "../db/queries/audience-stage.js";
import { identifyTemplate } from "./identify-template.js";
import { createLimiter } from "./limiter.js";
import type { JobTableDriver } from "../db/job-table/index.js";
import type { StageChunk } from "./member-chunks.js";

export interface SyncerOptions {
  pool: pg.Pool;
  clock: Clock;
  /**
   * Syncs running at once in this process; more wait their turn. Each holds
   * one pooled connection for as long as its client streams, and the pool is
   * shared with ingestion and the delivery loop, so this stays well below
   * the pool size. Default 4.
   */
  maxConcurrentSyncs?: number;
  /** The job table's driver: it says how the apply's transaction reaches the shards. */
  jobTable: JobTableDriver;
}

/** The audience a sync applies to, as looked up when the sync began. */
export interface SyncTarget {
  id: string;
  sourceId: string;
  key: string;
  kind: AudienceKindName;
  /** Its syncs list profile ids, sent to each person's userId. */
  byProfile?: boolean;
}

export interface Syncer {
  /**
   * Stages every chunk, then applies the whole sync in one transaction.
   * When `chunks` throws (a validation error, a client that went away), or
   * anything fails, nothing is applied: no message, no membership change.
   */
  run(target: SyncTarget, chunks: AsyncIterable<StageChunk> | Iterable<StageChunk>): Promise<ApplySyncResult & { skipped: number }>;
}

/**
 * Runs syncs through a staging table on one connection:
 *
 * - Staging happens chunk by chunk, each chunk INSERTed before the next is
 *   pulled from the request stream, so the process holds one chunk at a
 *   time and HTTP/2 flow control (or TCP) slows a faster client down.
 * - Staging statements autocommit into a session TEMP table: no transaction
 *   stays open while the client streams, so vacuum is not held back.
 * - The apply is one transaction, as long as the diff and the generated
 *   calls take (not as long as the client streams). It locks the audience
 *   row first: two syncs of one audience run one after the other, each
 *   diffed against the state the previous one committed.
 */
export function createSyncer(options: SyncerOptions): Syncer {
  const limiter = createLimiter(options.maxConcurrentSyncs ?? 4);
  return {
    run(target, chunks) {
      return limiter.run(async () => {
        const client = await options.pool.connect();
        try {
          await createStage(client);
          for await (const chunk of chunks) {
            await stageChunk(client, chunk.userIds, chunk.valueTexts);
          }
          // Profile ids become their people's userIds before the diff, which then knows only users.
          const skipped = target.byProfile ? await profilesToUsers(client) : 0;
          await analyzeStage(client);
          return { ...(await applyInTransaction(client, target, options.clock, options.jobTable)), skipped };
        } finally {
          // Dropping the stage also proves the connection is usable; one
          // left in an unknown state (interrupted statement, failed
          // rollback) is destroyed instead of going back to the pool.
          const reusable = await dropStage(client).then(
            () => true,
            () => false,
          );
          client.release(reusable ? undefined : true);
        }
      });
    },
  };
}

async function applyInTransaction(
  client: pg.PoolClient,
  target: SyncTarget,
  clock: Clock,
  jobTable: JobTableDriver,
): Promise<ApplySyncResult> {
  await client.query("BEGIN");
  try {
    // The sync writes messages and deliveries, then the audience row.
    await jobTable.reachShardsSequentially(client);
    // The lock orders this sync after any other of the same audience, and
    // fails it cleanly if the audience was deleted while it streamed.
    const audience = await selectAudience(client, target.id, true);
    if (!audience) throw new NotFoundError("audience", target.id);
    // The receive time of the generated calls: when the sync is applied.
    const receivedAt = clock.now();
    const result = await applySync(client, {
      audienceId: audience.id,
      sourceId: audience.source_id,
      receivedAt,
      removedValueText: audience.kind === "audience" ? "false" : "null",
      template: identifyTemplate(audience.key, receivedAt),
    });
    await markSynced(client, audience.id, result.members, receivedAt);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
}
