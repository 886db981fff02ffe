import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { migrationsDirectory, rewordedMigrations, runMigrations } from "../../src/db/migrate.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { testWith } from "../helpers/fixtures.js";

const test = testWith({ database: { migrated: false } });
// A second process's pool, beside the file's: two processes migrating at once.
let other: Pool;

test.beforeAll(({ database }) => {
  other = createPool({ connectionString: database.url });
});
test.afterAll(() => other?.end());

test("two processes migrating at once apply each migration exactly once", async ({ pool }) => {
  await Promise.all([pool, other].map((each) => runMigrations(each)));
  const applied = await pool.query("SELECT id, name FROM migrations ORDER BY id");
  expect(applied.rows.length).toBeGreaterThanOrEqual(1);
  expect(new Set(applied.rows.map((r) => r.id)).size).toBe(applied.rows.length);
  await runMigrations(other);
  expect((await pool.query("SELECT count(*)::int AS n FROM migrations")).rows[0].n).toBe(applied.rows.length);
});

test("the job table enforces its own rules", async ({ pool }) => {
  const db = pool;
  await db.query("INSERT INTO sources (id, name, write_key_hash) VALUES ('00000000-0000-4000-8000-000000000001', 's', 'x')");
  const message = await db.query(
    `INSERT INTO messages (source_id, message_id, type, received_at, payload)
     VALUES ('00000000-0000-4000-8000-000000000001', 'm', 'track', now(), '{}') RETURNING id`,
  );
  const queue = (status: string) =>
    db.query(
      `INSERT INTO delivery_queue (destination_id, message_pk, source_id, status, run_at, created_at)
       VALUES ('00000000-0000-4000-8000-000000000002', $1, '00000000-0000-4000-8000-000000000001', $2, now(), now())`,
      [message.rows[0].id, status],
    );
  const history = (status: string) =>
    db.query(
      `INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count, lease_token)
       VALUES ('00000000-0000-4000-8000-000000000002', nextval('delivery_ids'), $1, '00000000-0000-4000-8000-000000000001', $2, now(), now(), 0, 0)`,
      [message.rows[0].id, status],
    );
  // The queue holds only what is being worked, the history only what is final.
  await expect(queue("delivered")).rejects.toThrow(/delivery_queue_status_check/);
  await expect(history("pending")).rejects.toThrow(/delivery_history_status_check/);
  await expect(queue("running")).rejects.toThrow(/invalid input value for enum/);
  await expect(queue("pending")).resolves.toMatchObject({ rowCount: 1 });
  await expect(history("delivered")).resolves.toMatchObject({ rowCount: 1 });
  await expect(
    db.query(
      `INSERT INTO messages (source_id, message_id, type, received_at, payload)
       VALUES ('00000000-0000-4000-8000-000000000001', 'm', 'track', now(), '{}')`,
    ),
  ).rejects.toThrow(/unique/);
});

test("the claim query uses the index made for it", async ({ pool }) => {
  // One destination's oldest due deliveries, as each lane of the claim reads them.
  const query = `EXPLAIN SELECT destination_id, id FROM delivery_queue
      WHERE destination_id = '00000000-0000-4000-8000-000000000001' AND run_at <= now()
      ORDER BY run_at LIMIT 100 FOR UPDATE SKIP LOCKED`;
  const plan = await pool.query(query);
  await pool.query("SET enable_seqscan = off");
  const forced = await pool.query(query);
  await pool.query("RESET enable_seqscan");
  expect(plan.rows.length).toBeGreaterThan(0);
  expect(forced.rows.map((r) => r["QUERY PLAN"]).join("\n")).toContain("delivery_queue_lane_idx");
});

test("a database that applied migrations 2 and 3 as released starts with their reworded comments; other edits are still refused", async ({
  pool,
}) => {
  await runMigrations(pool);
  const db = pool;
  const hashes = async () =>
    new Map((await db.query<{ name: string; hash: string }>("SELECT name, hash FROM migrations")).rows.map((r) => [r.name, r.hash]));
  // postgres-migrations records sha1(file name + contents); the released files
  // differed from today's in their first line only.
  const word = ["SP", "EC"].join("");
  const released: Record<string, [string, string]> = {
    audiences: ["2_audiences.sql", `-- Audiences and computed traits (${word} section 6) and their stored state: the`],
    deletion_requests: ["3_deletion_requests.sql", `-- Deletion requests (${word} section 7). The user's data is removed when the`],
  };
  for (const entry of rewordedMigrations) {
    const [file, firstLine] = released[entry.name]!;
    const today = readFileSync(path.join(migrationsDirectory, file), "utf8");
    const sha1 = (text: string) =>
      createHash("sha1")
        .update(file + text, "utf8")
        .digest("hex");
    expect(sha1(today)).toBe(entry.hash);
    expect((await hashes()).get(entry.name)).toBe(entry.hash);
    expect(sha1([firstLine, ...today.split("\n").slice(1)].join("\n"))).toBe(entry.releasedHash);
    await db.query("UPDATE migrations SET hash = $2 WHERE name = $1", [entry.name, entry.releasedHash]);
  }
  await runMigrations(other);
  for (const entry of rewordedMigrations) expect((await hashes()).get(entry.name)).toBe(entry.hash);

  await db.query("UPDATE migrations SET hash = 'edited' WHERE name = 'audiences'");
  await expect(runMigrations(other)).rejects.toThrow(/applying the database migrations failed/);
  await db.query("UPDATE migrations SET hash = $1 WHERE name = 'audiences'", [rewordedMigrations[0]!.hash]);
});
