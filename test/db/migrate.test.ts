import { afterAll, beforeAll, expect, test } from "vitest";
import { runMigrations } from "../../src/db/migrate.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";

let database: TestDatabase;
let pools: Pool[];

beforeAll(async () => {
  database = await createTestDatabase();
  pools = [createPool({ connectionString: database.url }), createPool({ connectionString: database.url })];
});
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await database.drop();
});

test("two processes migrating at once apply each migration exactly once", async () => {
  await Promise.all(pools.map((pool) => runMigrations(pool)));
  const applied = await pools[0]!.query("SELECT id, name FROM migrations ORDER BY id");
  expect(applied.rows.length).toBeGreaterThanOrEqual(1);
  expect(new Set(applied.rows.map((r) => r.id)).size).toBe(applied.rows.length);
  await runMigrations(pools[1]!);
  expect((await pools[0]!.query("SELECT count(*)::int AS n FROM migrations")).rows[0].n).toBe(applied.rows.length);
});

test("the job table enforces its own rules", async () => {
  const db = pools[0]!;
  await db.query("INSERT INTO sources (id, name, write_key_hash) VALUES ('00000000-0000-4000-8000-000000000001', 's', 'x')");
  const message = await db.query(
    `INSERT INTO messages (source_id, message_id, type, received_at, payload)
     VALUES ('00000000-0000-4000-8000-000000000001', 'm', 'track', now(), '{}') RETURNING id`,
  );
  const insert = (status: string, finalized: string) =>
    db.query(
      `INSERT INTO deliveries (destination_id, message_pk, source_id, status, run_at, created_at, finalized_at)
       VALUES ('00000000-0000-4000-8000-000000000002', $1, '00000000-0000-4000-8000-000000000001', $2, now(), now(), ${finalized})`,
      [message.rows[0].id, status],
    );
  await expect(insert("delivered", "NULL")).rejects.toThrow(/finalized_iff_terminal/);
  await expect(insert("pending", "now()")).rejects.toThrow(/finalized_iff_terminal/);
  await expect(insert("running", "NULL")).rejects.toThrow(/invalid input value for enum/);
  await expect(insert("pending", "NULL")).resolves.toMatchObject({ rowCount: 1 });
  await expect(
    db.query(
      `INSERT INTO messages (source_id, message_id, type, received_at, payload)
       VALUES ('00000000-0000-4000-8000-000000000001', 'm', 'track', now(), '{}')`,
    ),
  ).rejects.toThrow(/unique/);
});

test("the claim query uses the index made for it", async () => {
  // One destination's oldest due deliveries, as each lane of the claim reads them.
  const query = `EXPLAIN SELECT destination_id, id FROM deliveries
      WHERE destination_id = '00000000-0000-4000-8000-000000000001' AND status IN ('pending', 'retrying') AND run_at <= now()
      ORDER BY run_at LIMIT 100 FOR UPDATE SKIP LOCKED`;
  const plan = await pools[0]!.query(query);
  await pools[0]!.query("SET enable_seqscan = off");
  const forced = await pools[0]!.query(query);
  await pools[0]!.query("RESET enable_seqscan");
  expect(plan.rows.length).toBeGreaterThan(0);
  expect(forced.rows.map((r) => r["QUERY PLAN"]).join("\n")).toContain("deliveries_lane_idx");
});
