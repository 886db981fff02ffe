import type pg from "pg";
import { enqueueCte, notifyIfQueued, orderingKeySql } from "../job-table/index.js";
import { templateSql, type IdentifyTemplate } from "./identify-template-sql.js";
import { stageTable } from "./audience-stage.js";

export interface ApplySyncOptions {
  audienceId: string;
  sourceId: string;
  receivedAt: Date;
  /** The trait value sent for users no longer present: `false` (audience) or `null` (computed trait). */
  removedValueText: "false" | "null";
  template: IdentifyTemplate;
}

export interface ApplySyncResult {
  added: number;
  removed: number;
  changed: number;
  /** Users in the sync (duplicates counted once). */
  members: number;
  /** Deliveries queued for the generated calls. */
  deliveries: number;
}

/**
 * Applies a staged sync in ONE statement, inside the caller's transaction:
 *
 * 1. `changes`: the diff between the stage and the stored state, as sets in
 *    Postgres: staged users not stored (added), stored with another value
 *    (changed, compared as jsonb), stored users not staged (removed).
 * 2. The stored state becomes the staged one (upsert changed/added, delete removed).
 * 3. One identify message per changed user, its payload built by filling the
 *    holes of a template cut from buildCallPayload's own output (see
 *    identify-template.ts), its messageId a fresh UUID.
 * 4. One delivery per message and enabled destination of the source. The
 *    calls carry no integrations object, so every enabled destination gets
 *    them, as an ordinary call of the source without integrations would.
 * 5. The delivery loops are woken when anything was queued (at commit, like ingest's).
 *
 * Nothing passes through Node: memory in this process does not depend on the
 * number of users; Postgres spills the large intermediate sets to disk.
 * Every data-modifying CTE sees the same snapshot, so the diff is computed
 * once, against the state before this statement.
 */
export async function applySync(client: pg.PoolClient, options: ApplySyncOptions): Promise<ApplySyncResult> {
  const payload = templateSql(options.template, { userId: "c.user_id", value: "c.value_text", messageId: "c.message_id" }, 5);
  const result = await client.query<{
    added: string;
    removed: string;
    changed: string;
    members: string;
    deliveries: string;
  }>(
    `WITH changes AS MATERIALIZED (
       SELECT s.user_id, s.value_text,
              CASE WHEN m.user_id IS NULL THEN 'added' ELSE 'changed' END AS change
         FROM ${stageTable} s
         LEFT JOIN audience_members m ON m.audience_id = $1 AND m.user_id = s.user_id
        WHERE m.user_id IS NULL OR m.value IS DISTINCT FROM s.value_text::jsonb
       UNION ALL
       SELECT m.user_id, $4::text, 'removed'
         FROM audience_members m
        WHERE m.audience_id = $1
          AND NOT EXISTS (SELECT 1 FROM ${stageTable} s WHERE s.user_id = m.user_id)
     ), upserted AS (
       INSERT INTO audience_members (audience_id, user_id, value)
       SELECT $1, c.user_id, c.value_text::jsonb FROM changes c WHERE c.change <> 'removed'
       ON CONFLICT (audience_id, user_id) DO UPDATE SET value = EXCLUDED.value
     ), deleted AS (
       DELETE FROM audience_members m USING changes c
        WHERE c.change = 'removed' AND m.audience_id = $1 AND m.user_id = c.user_id
     ), calls AS (
       -- gen_random_uuid() is volatile, so this CTE is materialised: one id
       -- per call, used both as the column and inside the payload.
       SELECT gen_random_uuid()::text AS message_id, user_id, value_text FROM changes
     ), inserted AS (
       INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
       SELECT $2, c.message_id, 'identify', c.user_id, $3, ${payload.sql}
         FROM calls c
        -- The source's row locked once (messages have no foreign key): a
        -- deletion of the source waits for this statement, then deletes
        -- what it stored.
        WHERE EXISTS (SELECT 1 FROM sources WHERE id = $2 FOR KEY SHARE)
       RETURNING id, user_id
     ), ${enqueueCte(`SELECT d.id, i.id, $2, $3, $3, ${orderingKeySql("i.user_id", "NULL")}
         FROM inserted i
        CROSS JOIN (SELECT d.id FROM destination_sources ds
                      JOIN destinations d ON d.id = ds.destination_id
                     WHERE ds.source_id = $2 AND d.enabled AND d.delivery_layout = 'per_call') d`)}, counts AS (
       SELECT count(*) FILTER (WHERE change = 'added') AS added,
              count(*) FILTER (WHERE change = 'removed') AS removed,
              count(*) FILTER (WHERE change = 'changed') AS changed
         FROM changes
     )
     SELECT counts.added, counts.removed, counts.changed,
            (SELECT count(*) FROM ${stageTable}) AS members,
            (SELECT count(*) FROM queued) AS deliveries,
            ${notifyIfQueued()}
       FROM counts`,
    [options.audienceId, options.sourceId, options.receivedAt, options.removedValueText, ...payload.params],
  );
  const row = result.rows[0]!;
  return {
    added: Number(row.added),
    removed: Number(row.removed),
    changed: Number(row.changed),
    members: Number(row.members),
    deliveries: Number(row.deliveries),
  };
}

/** Records the outcome of a sync on the audience row. */
export async function markSynced(client: pg.PoolClient, audienceId: string, members: number, at: Date): Promise<void> {
  await client.query("UPDATE audiences SET member_count = $2, last_synced_at = $3 WHERE id = $1", [audienceId, members, at]);
}
