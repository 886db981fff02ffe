import type pg from "pg";
import type { Logger } from "../../logger.js";
import { detectJobTableLayout, hasCitusExtension } from "./layout.js";

/** How a database's tables are laid out on Citus. */
export interface CitusConversionOptions {
  /** Shards per distributed table (Citus's default is 32; a few per worker core is plenty). */
  shardCount: number;
  logger?: Pick<Logger, "info">;
}

// Small tables read by every claim and every ingest: copied to every node,
// so the joins to them stay on the node that holds the shard. Reference
// tables carry no triggers (the migrations moved them into the code), and
// their foreign keys point only at other reference tables.
const referenceTables = ["sources", "destinations", "destination_sources", "tracking_plans", "audiences", "audience_members"];

// Everything about one destination on one shard: its deliveries, their
// history and attempts, and the rows the claim reads beside them (its rate
// bucket and its endpoint health), all colocated with delivery_queue.
const byDestination = [
  "delivery_history",
  "delivery_attempts",
  "delivery_batch_attempts",
  "destination_rate_buckets",
  "destination_health",
];

/**
 * Converts a migrated single-Postgres installation to the distributed
 * layout, in the order Citus needs, keeping every row and every sequence:
 *
 * 1. foreign keys that would tie a distributed table to a reference table
 *    by a cascade go (the code deletes those rows itself);
 * 2. `messages` loses its unique (source_id, message_id), which does not
 *    contain the column it is distributed by; `message_keys`, distributed
 *    by message_id, takes over de-duplication;
 * 3. reference tables, then `delivery_queue` by destination_id with its
 *    colocated tables, then `messages` by id with `call_fates` beside it;
 * 4. the sequences are set back to where they were (Citus leaves them, but
 *    nothing here relies on that).
 *
 * The remaining tables (background jobs, webhook source requests, deletion
 * requests, plan violations, migrations) stay ordinary tables on the
 * coordinator: nothing joins them to a distributed table in one statement.
 * Idempotent: a database already converted is left alone.
 */
export async function convertToCitus(client: pg.ClientBase, options: CitusConversionOptions): Promise<boolean> {
  if (!(await hasCitusExtension(client))) throw new Error("the citus extension is not installed in this database");
  if ((await detectJobTableLayout(client)) === "citus") return false;
  const step = async (what: string, sql: string) => {
    options.logger?.info({ step: what }, "converting to the Citus layout");
    await client.query(sql);
  };
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock(hashtext('waypost citus conversion'))");
    const sequences = await client.query<{ name: string; value: string; called: boolean }>(
      `SELECT s.schemaname || '.' || s.sequencename AS name, coalesce(s.last_value, 1)::text AS value, s.last_value IS NOT NULL AS called
         FROM pg_sequences s WHERE s.schemaname = current_schema()`,
    );
    await step(
      "foreign keys from distributed tables",
      `ALTER TABLE destination_rate_buckets DROP CONSTRAINT IF EXISTS destination_rate_buckets_destination_id_fkey;
       ALTER TABLE call_fates DROP CONSTRAINT IF EXISTS call_fates_destination_id_fkey;
       ALTER TABLE call_fates DROP CONSTRAINT IF EXISTS call_fates_message_pk_fkey;
       ALTER TABLE plan_violations DROP CONSTRAINT IF EXISTS plan_violations_source_id_fkey`,
    );
    await step(
      "message keys",
      `CREATE TABLE message_keys (
         message_id text NOT NULL,
         source_id uuid NOT NULL,
         message_pk bigint NOT NULL,
         PRIMARY KEY (message_id, source_id)
       );
       INSERT INTO message_keys (message_id, source_id, message_pk) SELECT message_id, source_id, id FROM messages;
       ALTER TABLE messages DROP CONSTRAINT messages_source_id_message_id_key;
       CREATE INDEX messages_source_message_idx ON messages (source_id, message_id)`,
    );
    for (const table of referenceTables) await step(`reference table ${table}`, `SELECT create_reference_table('${table}')`);
    await step(
      "delivery_queue",
      `SELECT create_distributed_table('delivery_queue', 'destination_id', shard_count => ${Math.trunc(options.shardCount)})`,
    );
    for (const table of byDestination) {
      await step(table, `SELECT create_distributed_table('${table}', 'destination_id', colocate_with => 'delivery_queue')`);
    }
    await step("messages", `SELECT create_distributed_table('messages', 'id', shard_count => ${Math.trunc(options.shardCount)})`);
    await step("call_fates", "SELECT create_distributed_table('call_fates', 'message_pk', colocate_with => 'messages')");
    await step(
      "message_keys",
      `SELECT create_distributed_table('message_keys', 'message_id', shard_count => ${Math.trunc(options.shardCount)}, colocate_with => 'none')`,
    );
    // A statement that spans shards (an ingest's inserts, a purge) may open
    // several connections to one worker to run its shards in parallel, and
    // each beyond the one a session keeps is a new backend forked and ended
    // per statement: with Waypost's short statements that cost more than the
    // work (ingest ran at a twelfth of one Postgres's rate, the workers busy
    // starting backends). One connection per worker per session, kept.
    await step(
      "settings",
      `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET citus.max_adaptive_executor_pool_size = 1', current_database()); END $$`,
    );
    for (const sequence of sequences.rows) {
      await client.query(
        "SELECT setval($1::text::regclass, greatest($2::bigint, (SELECT last_value FROM pg_sequences WHERE schemaname || '.' || sequencename = $1::text)), $3)",
        [sequence.name, sequence.value, sequence.called],
      );
    }
    await client.query("COMMIT");
    return true;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}
