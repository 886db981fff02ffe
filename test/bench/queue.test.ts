// The benchmark fills its queue with direct SQL (bench/lib/queue.mjs) rather
// than through the service. This runs that insert against a migrated
// database and claims the rows with the service's own claim, so a schema
// change that breaks the benchmark's statement fails here, not in a bench run.
import { afterAll, beforeAll, expect, test } from "vitest";
import { claimDeliveries } from "../../src/db/job-table/index.js";
import { runMigrations } from "../../src/db/migrate.js";
import { createPool, type Pool, type Queryable } from "../../src/db/pool.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";

// bench/ is plain JavaScript (type-checked by bench/tsconfig.json); this
// project's tsconfig does not read JavaScript, so the import is typed here.
interface BenchQueue {
  queueDeliveries(
    pool: Queryable,
    options: { sourceId: string; destinationId: string; count: number; prefix?: string },
  ): Promise<void>;
}
const benchQueue = new URL("../../bench/lib/queue.mjs", import.meta.url).href;

const sourceId = "00000000-0000-4000-8000-0000000000a7";
const destinationId = "00000000-0000-4000-8000-0000000000b7";

let database: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  database = await createTestDatabase();
  pool = createPool({ connectionString: database.url });
  await runMigrations(pool);
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 'bench', 'k')", [sourceId]);
  await pool.query(
    `INSERT INTO destinations (id, name, enabled, webhooks) VALUES ($1, 'bench', true, '[{"url":"http://example.com","headers":{}}]')`,
    [destinationId],
  );
});
afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

test("the deliveries the bench queues in SQL are claimable by the service's claim, with their bodies", async () => {
  const { queueDeliveries } = (await import(benchQueue)) as BenchQueue;
  const count = 120;
  await queueDeliveries(pool, { sourceId, destinationId, count, prefix: "q" });

  const { deliveries } = await claimDeliveries(pool, {
    now: new Date(Date.now() + 1_000),
    limit: 1_000,
    perDestinationLimit: 1_000,
    room: new Map(),
    leaseMs: 60_000,
    owner: "bench-test",
  });
  expect(deliveries).toHaveLength(count);
  const messageIds = new Set(deliveries.map((d) => d.messageId));
  expect(messageIds).toEqual(new Set(Array.from({ length: count }, (_, n) => `q-${n}`)));
  for (const delivery of deliveries) {
    expect(delivery).toMatchObject({ destinationId, attemptCount: 0, probe: false });
    // The body is the stored call as the service would send it.
    expect(JSON.parse(delivery.payload)).toMatchObject({ type: "track", event: "Order Completed", messageId: delivery.messageId });
  }
});
