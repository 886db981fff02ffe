import { copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { migrate } from "postgres-migrations";
import { expect } from "vitest";
import { claimDeliveries, completeDeliveries, replayDelivery } from "../../src/db/job-table/index.js";
import { migrationsDirectory, runMigrations } from "../../src/db/migrate.js";
import type { Pool } from "../../src/db/pool.js";
import { testWith } from "../helpers/fixtures.js";

// An installation from before the queue-and-history layout, holding
// deliveries in every state (one leased, retrying ones with attempts, each
// final state), upgraded by the migration: every delivery and attempt is
// where the new layout keeps it, with what it had, and the job table works
// on them.

const test = testWith({ database: { migrated: false } });
let oldMigrations: string;
const source = "00000000-0000-4000-8000-0000000000a1";
const destination = "00000000-0000-4000-8000-0000000000b1";
const statuses = ["pending", "retrying", "delivered", "failed", "expired", "cancelled"] as const;

test.beforeAll(async ({ pool }) => {
  // The migrations before the split, as a release that had them applied them.
  oldMigrations = mkdtempSync(path.join(tmpdir(), "waypost-migrations-"));
  for (const file of readdirSync(migrationsDirectory)) {
    if (Number(file.split("_")[0]) <= 10) copyFileSync(path.join(migrationsDirectory, file), path.join(oldMigrations, file));
  }
  const client = await pool.connect();
  try {
    await migrate({ client }, oldMigrations);
  } finally {
    client.release();
  }
});
test.afterAll(() => {
  if (oldMigrations) rmSync(oldMigrations, { recursive: true, force: true });
});

async function fillOldTable(pool: Pool) {
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', 'k')", [source]);
  await pool.query(
    `INSERT INTO destinations (id, name, enabled, webhooks) VALUES ($1, 'd', true, '[{"url":"http://example.com","headers":{}}]')`,
    [destination],
  );
  for (const [i, status] of statuses.entries()) {
    const final = status !== "pending" && status !== "retrying";
    const message = await pool.query<{ id: string }>(
      `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
       VALUES ($1, $2, 'track', 'u', now() - interval '1 hour', $3) RETURNING id`,
      [source, `m-${status}`, JSON.stringify({ messageId: `m-${status}`, type: "track" })],
    );
    const delivery = await pool.query<{ id: string }>(
      `INSERT INTO deliveries (destination_id, message_pk, source_id, status, run_at, created_at, attempt_count, lease_token,
                               leased_until, lease_owner, first_attempt_at, finalized_at, ordering_key, retry_urls, last_error)
       VALUES ($1, $2, $3, $4, now() - interval '1 minute', now() - interval '1 hour', $5, $6,
               $7, $8, now() - interval '50 minutes', CASE WHEN $9 THEN now() - interval '10 minutes' END, 'u',
               $10, $11)
       RETURNING id`,
      [
        destination,
        message.rows[0]!.id,
        source,
        status,
        i,
        10 + i,
        status === "pending" ? new Date(Date.now() - 1_000) : null,
        status === "pending" ? "old-worker" : null,
        final,
        status === "retrying" ? ["http://example.com"] : null,
        status === "failed" ? "HTTP 410" : null,
      ],
    );
    for (let attempt = 1; attempt <= i; attempt++) {
      await pool.query(
        `INSERT INTO delivery_attempts (destination_id, delivery_id, attempt, url_index, url, attempted_at, outcome, status_code, latency_ms)
         VALUES ($1, $2, $3, 0, 'http://example.com', now() - interval '30 minutes', 'retryable', 503, 12)`,
        [destination, delivery.rows[0]!.id, attempt],
      );
    }
  }
}

test("the upgrade moves waiting deliveries to the queue and finished ones to the history, with their attempts", async ({ pool }) => {
  await fillOldTable(pool);
  const before = await pool.query(
    `SELECT id::text, status, attempt_count, lease_token, first_attempt_at, finalized_at, ordering_key, retry_urls, last_error
       FROM deliveries ORDER BY id`,
  );
  const attemptsBefore = (await pool.query("SELECT count(*)::int AS n FROM delivery_attempts")).rows[0].n;
  expect(attemptsBefore).toBe(15);

  await runMigrations(pool);

  const queued = await pool.query("SELECT status::text, lease_owner FROM delivery_queue ORDER BY id");
  expect(queued.rows).toEqual([
    { status: "pending", lease_owner: "old-worker" },
    { status: "retrying", lease_owner: null },
  ]);
  const finished = await pool.query<{ status: string; finished_xid: string | null }>(
    "SELECT status::text, finished_xid::text FROM delivery_history ORDER BY id",
  );
  expect(finished.rows.map((r) => r.status)).toEqual(["delivered", "failed", "expired", "cancelled"]);
  // Each finished delivery is in the finish feed's index (stamped, whatever the old row had).
  expect(finished.rows.every((r) => r.finished_xid !== null)).toBe(true);
  const after = await pool.query(
    `SELECT id::text, status, attempt_count, lease_token, first_attempt_at, finalized_at, ordering_key, retry_urls, last_error
       FROM deliveries ORDER BY id`,
  );
  expect(after.rows).toEqual(before.rows);
  expect((await pool.query("SELECT count(*)::int AS n FROM delivery_attempts")).rows[0].n).toBe(attemptsBefore);
  // The old table and its triggers are gone; ids go on after the old ones.
  expect((await pool.query("SELECT to_regclass('deliveries_v1') AS t")).rows[0].t).toBeNull();
  const next = await pool.query<{ id: string }>("SELECT nextval('delivery_ids')::text AS id");
  expect(BigInt(next.rows[0]!.id)).toBeGreaterThan(BigInt(before.rows.at(-1)!.id));
});

test("after the upgrade the job table works on the moved deliveries", async ({ pool }) => {
  // The pending one's lease has run out: it is claimed, and finishing it moves it to the history.
  const now = new Date();
  const { deliveries } = await claimDeliveries(pool, {
    now,
    limit: 10,
    perDestinationLimit: 10,
    room: new Map(),
    leaseMs: 60_000,
    owner: "new-worker",
  });
  expect(deliveries.map((d) => d.messageId).sort()).toEqual(["m-pending", "m-retrying"]);
  const written = await completeDeliveries(
    pool,
    deliveries.map((d) => ({
      destinationId: d.destinationId,
      id: d.id,
      leaseToken: d.leaseToken,
      status: "delivered" as const,
      runAt: now,
      attempted: true,
      attemptedAt: now,
      retryUrls: null,
      attempts: [],
    })),
  );
  expect(written.size).toBe(2);
  expect((await pool.query("SELECT count(*)::int AS n FROM delivery_queue")).rows[0].n).toBe(0);
  // A failed one moved by the migration can be replayed back into the queue.
  const failed = await pool.query<{ id: string }>("SELECT id::text FROM delivery_history WHERE status = 'failed'");
  expect(await replayDelivery(pool, destination, failed.rows[0]!.id, now)).toBe(true);
  const replayed = await pool.query("SELECT status::text, lease_token FROM delivery_queue");
  expect(replayed.rows).toEqual([{ status: "retrying", lease_token: 10 + statuses.indexOf("failed") + 1 }]);
});
