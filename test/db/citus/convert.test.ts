import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { convertToCitus } from "../../../src/db/citus/convert.js";
import { detectJobTableLayout } from "../../../src/db/citus/layout.js";
import { citusJobTable, singleNodeJobTable } from "../../../src/db/job-table/index.js";
import { runMigrations } from "../../../src/db/migrate.js";
import { createPool, type Pool } from "../../../src/db/pool.js";
import { citusSkipReason, citusUrl, createCitusTestDatabase, type CitusTestDatabase } from "../../helpers/citus.js";

const call = (messageId: string) => ({
  messageId,
  type: "track",
  userId: `user-${messageId}`,
  payload: JSON.stringify({ type: "track", event: "Converted", messageId }),
  integrations: undefined,
});

/** Rows per table and the sequences' next values, as the conversion must keep them. */
async function census(pool: Pool) {
  const counts = await pool.query<{ messages: string; queued: string; finished: string; sources: string }>(
    `SELECT (SELECT count(*) FROM messages)::text AS messages, (SELECT count(*) FROM delivery_queue)::text AS queued,
            (SELECT count(*) FROM delivery_history)::text AS finished, (SELECT count(*) FROM sources)::text AS sources`,
  );
  const ids = await pool.query<{ max_message: string; max_delivery: string }>(
    "SELECT (SELECT max(id) FROM messages)::text AS max_message, (SELECT max(id) FROM deliveries)::text AS max_delivery",
  );
  return { ...counts.rows[0]!, ...ids.rows[0]! };
}

describe.skipIf(!citusUrl)(`converting an installation to Citus${citusSkipReason}`, () => {
  let database: CitusTestDatabase;
  let pool: Pool;
  beforeAll(async () => {
    database = await createCitusTestDatabase({ convert: false });
    pool = createPool({ connectionString: database.url, max: 2 });
    await runMigrations(pool);
  }, 120_000);
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  it("distributes the job table by destination and keeps every row and sequence", async () => {
    expect(await detectJobTableLayout(pool)).toBe("postgres");
    // An installation in use on one Postgres: calls stored, one delivery finished, the rest queued.
    const sourceId = "00000000-0000-4000-8000-000000000001";
    const destinationId = "00000000-0000-4000-8000-000000000002";
    await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 'web', 'x')", [sourceId]);
    await pool.query("INSERT INTO destinations (id, name, enabled, webhooks) VALUES ($1, 'hook', true, '[\"https://example.com/\"]')", [
      destinationId,
    ]);
    await pool.query("INSERT INTO destination_rate_buckets (destination_id, tokens, refilled_at) VALUES ($1, 0, now())", [destinationId]);
    await pool.query("INSERT INTO destination_sources (source_id, destination_id) VALUES ($1, $2)", [sourceId, destinationId]);
    await singleNodeJobTable.storeMessages(pool, sourceId, new Date(), ["a", "b", "c", "d"].map(call));
    await pool.query(
      `UPDATE delivery_queue SET leased_until = now() + interval '1 minute', lease_token = 1 WHERE id = (SELECT min(id) FROM delivery_queue)`,
    );
    const first = (await pool.query<{ id: string }>("SELECT min(id)::text AS id FROM delivery_queue")).rows[0]!.id;
    await singleNodeJobTable.completeDeliveries(pool, [
      {
        destinationId,
        id: first,
        leaseToken: 1,
        status: "delivered",
        runAt: new Date(),
        attempted: true,
        attemptedAt: new Date(),
        retryUrls: null,
        attempts: [],
      },
    ]);
    const before = await census(pool);
    expect(before).toMatchObject({ messages: "4", queued: "3", finished: "1", sources: "1" });

    const client = await pool.connect();
    try {
      expect(await convertToCitus(client, { shardCount: 4 })).toBe(true);
      expect(await convertToCitus(client, { shardCount: 4 })).toBe(false);
    } finally {
      client.release();
    }
    expect(await detectJobTableLayout(pool)).toBe("citus");
    const tables = await pool.query<{ table: string; method: string }>(
      "SELECT logicalrelid::text AS table, partmethod AS method FROM pg_dist_partition WHERE logicalrelid::text NOT LIKE '%\\_2%' AND logicalrelid::text NOT LIKE '%default' ORDER BY 1",
    );
    expect(Object.fromEntries(tables.rows.map((r) => [r.table, r.method]))).toMatchObject({
      delivery_queue: "h",
      delivery_history: "h",
      delivery_attempts: "h",
      destination_rate_buckets: "h",
      destination_health: "h",
      messages: "h",
      message_keys: "h",
      call_fates: "h",
      sources: "n",
      destinations: "n",
      destination_sources: "n",
    });
    // A new session of the database uses one executor connection per worker (set by the conversion).
    const session = createPool({ connectionString: database.url, max: 1 });
    try {
      const setting = await session.query<{ value: string }>("SELECT current_setting('citus.max_adaptive_executor_pool_size') AS value");
      expect(setting.rows[0]?.value).toBe("1");
    } finally {
      await session.end();
    }
    // Every row kept, each message's key in message_keys.
    expect(await census(pool)).toEqual(before);
    const keys = await pool.query<{ n: string }>("SELECT count(*)::text AS n FROM message_keys");
    expect(keys.rows[0]?.n).toBe("4");

    // The sequences go on from where they were: new calls get higher ids, and a repeat is still a repeat.
    const stored = await citusJobTable.storeMessages(pool, sourceId, new Date(), ["a", "e"].map(call));
    expect(stored).toMatchObject({ fresh: true, queued: true });
    const after = await census(pool);
    expect(after.messages).toBe("5");
    expect(BigInt(after.max_message)).toBeGreaterThan(BigInt(before.max_message));
    expect(BigInt(after.max_delivery)).toBeGreaterThan(BigInt(before.max_delivery));
  });
});
