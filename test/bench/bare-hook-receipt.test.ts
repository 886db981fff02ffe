// The webhook-source scenario's bare reference (bench/bare-hook-receipt.mjs)
// checks Stripe signatures and inserts each request into hook_requests with
// the bench's own SQL: run against a migrated database, every request the
// load client sent must be accepted and stored, so a schema change that
// breaks it fails here, not in a bench run.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { openTestDatabase, type OpenTestDatabase } from "../helpers/database.js";

interface BareHookModule {
  bareHookReceipt(options: { url: string; sourceId: string; secret: string; durationMs: number; concurrency?: number }): Promise<{
    per_s: number;
    refused: number;
  }>;
}
const bench = (file: string) => new URL(`../../bench/${file}`, import.meta.url).href;

let db: OpenTestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await openTestDatabase();
  ({ pool } = db);
});
afterAll(async () => {
  await db?.close();
});

test("bench/bare-hook-receipt.mjs accepts and stores every signed request", async () => {
  const { bareHookReceipt } = (await import(bench("bare-hook-receipt.mjs"))) as BareHookModule;
  const sourceId = randomUUID();
  const result = await bareHookReceipt({ url: db.database.url, sourceId, secret: "whsec_test", durationMs: 300, concurrency: 4 });
  expect(result.refused).toBe(0);
  expect(result.per_s).toBeGreaterThan(0);
  const { rows } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM hook_requests WHERE source_id = $1", [sourceId]);
  expect(rows[0]!.n).toBeGreaterThan(0);
});
