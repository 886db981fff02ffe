import { randomUUID } from "node:crypto";
import pg from "pg";
import { expect } from "vitest";
import type { Pool } from "../../../src/db/pool.js";
import type { NewHookRequest } from "../../../src/db/queries/hook-receipt.js";
import { createHookStore } from "../../../src/ingest/hooks/hook-store.js";
import { testWith } from "../../helpers/fixtures.js";

const test = testWith();

/** Resolves once a batch statement waits on a lock (polling pg_stat_activity: the state is only visible there). */
async function waitForBlockedBatch(pool: Pool): Promise<void> {
  for (;;) {
    const { rows } = await pool.query(
      "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%WITH input AS%' AND datname = current_database()",
    );
    if (rows.length > 0) return;
  }
}

function request(sourceId: string, body: string, idempotencyKey?: string): NewHookRequest {
  return {
    sourceId,
    receivedAt: new Date(),
    method: "POST",
    query: "",
    contentType: "application/json",
    headers: { "x-n": body },
    body: Buffer.from(body),
    idempotencyKey,
  };
}

async function rows(pool: Pool, sourceId: string) {
  const result = await pool.query<{ id: string; body: Buffer; status: string }>(
    "SELECT id::text, body, status FROM hook_requests WHERE source_id = $1 ORDER BY hook_requests.id",
    [sourceId],
  );
  return result.rows.map((r) => ({ id: r.id, body: r.body.toString(), status: r.status }));
}

test("requests stored together: each gets its own row and status, in order of arrival", async ({ pool }) => {
  const source = randomUUID();
  const store = createHookStore({ pool });
  await store.store(request(source, "before", "k-old"));
  // Sent at once: the first goes alone, the rest wait for it and go in one statement.
  const sent = [
    request(source, "r0", "k1"),
    request(source, "r1", "k-old"),
    request(source, "r2"),
    request(source, "r3", "k1"),
    request(source, "r4", "k2"),
    request(source, "r5"),
  ];
  const results = await Promise.all(sent.map((r) => store.store(r)));
  const stored = await rows(pool, source);
  expect(stored.map((r) => r.body)).toEqual(["before", "r0", "r1", "r2", "r3", "r4", "r5"]);
  expect(stored.map((r) => r.status)).toEqual(["pending", "pending", "duplicate", "pending", "duplicate", "pending", "pending"]);
  // Each promise has its own row.
  expect(results.map((r) => r.id)).toEqual(stored.slice(1).map((r) => r.id));
  expect(results.map((r) => r.duplicate)).toEqual([false, true, false, true, false, false]);
});

test("a key another transaction is storing: requests with it wait for its commit and are duplicates", async ({ database, pool }) => {
  const source = randomUUID();
  const store = createHookStore({ pool });
  const other = new pg.Client({ connectionString: database.url });
  await other.connect();
  try {
    await other.query("BEGIN");
    await other.query(
      `INSERT INTO hook_requests (source_id, received_at, method, headers, body, idempotency_key, status)
       VALUES ($1, now(), 'POST', '{}', 'other', 'k', 'pending')`,
      [source],
    );
    // The first request goes alone and waits on the other transaction's key; the next two go together after it.
    const first = store.store(request(source, "a", "k"));
    const rest = [store.store(request(source, "b", "k")), store.store(request(source, "c", "k2"))];
    await other.query("COMMIT");
    const results = await Promise.all([first, ...rest]);
    expect(results.map((r) => r.duplicate)).toEqual([true, true, false]);
    expect((await rows(pool, source)).map((r) => `${r.body}:${r.status}`)).toEqual([
      "other:pending",
      "a:duplicate",
      "b:duplicate",
      "c:pending",
    ]);
  } finally {
    await other.end();
  }
});

test("a batch whose statement meets a key committed by another transaction meanwhile falls back to one statement each", async ({
  database,
  pool,
}) => {
  const source = randomUUID();
  const store = createHookStore({ pool });
  const other = new pg.Client({ connectionString: database.url });
  await other.connect();
  try {
    // Hold the first (lone) statement on a lock so the next requests queue into one batch.
    await other.query("BEGIN");
    await other.query(
      `INSERT INTO hook_requests (source_id, received_at, method, headers, body, idempotency_key, status)
       VALUES ($1, now(), 'POST', '{}', 'held', 'lone', 'pending')`,
      [source],
    );
    const lone = store.store(request(source, "lone", "lone"));
    const batch = [store.store(request(source, "x", "k-x")), store.store(request(source, "y", "k-y"))];
    // Before the batch runs, another transaction takes k-x (uncommitted until after the batch waits on it).
    const third = new pg.Client({ connectionString: database.url });
    await third.connect();
    await third.query("BEGIN");
    await third.query(
      `INSERT INTO hook_requests (source_id, received_at, method, headers, body, idempotency_key, status)
       VALUES ($1, now(), 'POST', '{}', 'taken', 'k-x', 'pending')`,
      [source],
    );
    await other.query("COMMIT");
    expect((await lone).duplicate).toBe(true);
    // The batch's statement now waits on the third transaction's key: commit it only then, so the batch meets it.
    await waitForBlockedBatch(pool);
    await third.query("COMMIT");
    await third.end();
    const results = await Promise.all(batch);
    expect(results.map((r) => r.duplicate)).toEqual([true, false]);
    const stored = (await rows(pool, source)).map((r) => `${r.body}:${r.status}`);
    expect(stored.filter((s) => s.endsWith(":pending")).sort()).toEqual(["held:pending", "taken:pending", "y:pending"]);
  } finally {
    await other.end();
  }
});
