import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createNotifier, type Notifier } from "../../../../src/background/notifier.js";
import { systemClock } from "../../../../src/clock.js";
import { loadConfig } from "../../../../src/config.js";
import { citusJobTable } from "../../../../src/db/job-table/index.js";
import type { Pool } from "../../../../src/db/pool.js";
import { createDeliveryLoop, type DeliveryLoop } from "../../../../src/delivery/loop.js";
import { createLogger } from "../../../../src/logger.js";
import { createTransformSandboxes, type TransformSandboxes } from "../../../../src/sandbox/transform-sandbox.js";
import { citusSkipReason, citusUrl, openCitusTestDatabase } from "../../../helpers/citus.js";
import { seedDeliveries, seedDestination, statuses } from "../../../helpers/job-table-rows.js";
import { startReceiver, type Receiver } from "../../../helpers/receiver.js";

// The delivery loop with the Citus driver passed in, against the cluster:
// claims, heartbeats and completions of two destinations (on their shards)
// reach a real receiver and are written back.
describe.skipIf(!citusUrl)(`the delivery loop on Citus${citusSkipReason}`, () => {
  let pool: Pool;
  let close: () => Promise<void>;
  let url: string;
  let receiver: Receiver;
  let loop: DeliveryLoop | undefined;
  let sandboxes: TransformSandboxes;
  let notifier: Notifier | undefined;

  beforeAll(async () => {
    const opened = await openCitusTestDatabase();
    ({ pool, close } = opened);
    url = opened.database.url;
    receiver = await startReceiver();
  }, 120_000);
  afterAll(async () => {
    await loop?.stop();
    await notifier?.close();
    await sandboxes?.close();
    await receiver?.close();
    await close?.();
  });

  test("delivers every queued delivery of two destinations once, and records it", async () => {
    const now = systemClock.now();
    const source = await pool.query<{ id: string }>(
      "INSERT INTO sources (id, name, write_key_hash) VALUES (gen_random_uuid(), 's', 'x') RETURNING id",
    );
    const sourceId = source.rows[0]!.id;
    const destinations = [
      await seedDestination(pool, sourceId, now, { url: receiver.url }),
      await seedDestination(pool, sourceId, now, { url: receiver.url }),
    ];
    const messages = await pool.query<{ id: string }>(
      `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
       SELECT $1, 'call-' || g, 'track', 'u' || g, $2, json_build_object('type', 'track', 'event', 'e' || g, 'messageId', 'call-' || g)::text
         FROM generate_series(1, 10) g RETURNING id`,
      [sourceId, now],
    );
    const pks = messages.rows.map((row) => row.id);
    for (const destination of destinations) await seedDeliveries(pool, destination, pks, now);
    const config = loadConfig({ DATABASE_URL: url, WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "true", WAYPOST_ADMIN_TOKEN: "x".repeat(32) });
    sandboxes = createTransformSandboxes({ ...config.transform });
    const logger = createLogger(process.env.ZZ_LOG ?? "silent");
    notifier = createNotifier({ connectionString: url, logger });
    loop = createDeliveryLoop({
      pool,
      notifier,
      config: config.delivery,
      clock: systemClock,
      logger,
      sandboxes,
      jobTable: citusJobTable,
    });
    const written: string[] = [];
    loop.events.on("completed", (completions) => written.push(...completions.map((c) => c.id)));
    await loop.start();
    const requests = await receiver.waitForRequests(20);
    expect(new Set(requests.map((r) => `${JSON.parse(r.body).messageId}`)).size).toBe(10);
    await loop.settle();
    await loop.stop();
    loop = undefined;
    expect(written).toHaveLength(20);
    for (const destination of destinations) expect([...(await statuses(pool, destination)).values()]).toEqual(Array(10).fill("delivered"));
    const attempts = await pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM delivery_attempts WHERE destination_id = ANY($1) AND outcome = 'success'",
      [destinations],
    );
    expect(attempts.rows[0]!.n).toBe(20);
    // Endpoint health recorded each destination's successes, in the completions' transactions.
    const health = await pool.query(
      "SELECT destination_id FROM destination_health WHERE destination_id = ANY($1) AND last_success_at IS NOT NULL",
      [destinations],
    );
    expect(health.rows).toHaveLength(2);
    // Nothing sent twice.
    expect(receiver.requests).toHaveLength(20);
  });
});
