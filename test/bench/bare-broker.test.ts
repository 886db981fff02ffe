// The broker scenarios' bare reference (bench/bare-broker.mjs) claims and
// completes deliveries with the bench's own SQL and publishes them itself:
// run against a migrated database and the machine's RabbitMQ and NATS, it
// must record every queued delivery as delivered and leave every call in the
// broker, so a schema or client change that breaks it fails here, not in a
// bench run.
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Pool, Queryable } from "../../src/db/pool.js";
import { brokerAnswers, testAmqpUrl, testNatsUrl, withAmqpExchange, withNatsStream } from "../helpers/brokers.js";
import { openTestDatabase, type OpenTestDatabase } from "../helpers/database.js";

// bench/ is plain JavaScript (type-checked by bench/tsconfig.json); the imports are typed here.
interface QueueModule {
  queueDeliveries(pool: Queryable, options: { sourceId: string; destinationId: string; count: number; prefix?: string }): Promise<void>;
  addBareDestination(pool: Queryable, options: { id: string; name: string }): Promise<void>;
}
interface BareBrokerModule {
  bareBroker(options: { url: string; kind: "amqp" | "nats"; target: string; count: number; inflight?: number }): Promise<{
    recorded: number;
    failed: number;
  }>;
}
const bench = (file: string) => new URL(`../../bench/${file}`, import.meta.url).href;
const [amqpUp, natsUp] = await Promise.all([brokerAnswers("amqp", testAmqpUrl), brokerAnswers("nats", testNatsUrl)]);

const sourceId = "00000000-0000-4000-8000-0000000000c7";
const count = 60;
let db: OpenTestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await openTestDatabase();
  ({ pool } = db);
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 'bench', 'k')", [sourceId]);
});
afterAll(async () => {
  await db?.close();
});

/** Queues `count` deliveries for a destination of the bare loop's own, runs it, and checks the job table. */
async function runBare(kind: "amqp" | "nats", destinationId: string, target: string) {
  const { queueDeliveries, addBareDestination } = (await import(bench("lib/queue.mjs"))) as QueueModule;
  const { bareBroker } = (await import(bench("bare-broker.mjs"))) as BareBrokerModule;
  await addBareDestination(pool, { id: destinationId, name: `bare-${kind}` });
  await queueDeliveries(pool, { sourceId, destinationId, count, prefix: kind });
  const result = await bareBroker({ url: db.database.url, kind, target, count, inflight: 8 });
  expect(result).toMatchObject({ recorded: count, failed: 0 });
  const { rows } = await pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM deliveries WHERE destination_id = $1 AND status = 'delivered'",
    [destinationId],
  );
  expect(rows[0]!.n).toBe(count);
}

test.skipIf(!amqpUp)("bench/bare-broker.mjs amqp: every queued call is published, confirmed and recorded", async () => {
  await withAmqpExchange(async (tag, stored) => {
    await runBare("amqp", "00000000-0000-4000-8000-0000000000c1", tag);
    expect(await stored()).toBe(count);
  });
});

test.skipIf(!natsUp)("bench/bare-broker.mjs nats: every queued call is published, acknowledged and recorded", async () => {
  await withNatsStream(async (tag, stored) => {
    await runBare("nats", "00000000-0000-4000-8000-0000000000c2", tag);
    expect(await stored()).toBe(count);
  });
});
