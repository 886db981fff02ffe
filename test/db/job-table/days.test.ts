import { expect } from "vitest";
import { dropDaysBefore } from "../../../src/db/job-table/index.js";
import type { Pool } from "../../../src/db/pool.js";
import { testWith } from "../../helpers/fixtures.js";

// Retention drops whole days: each day's partition is detached (a short
// lock on its table), then dropped on its own; a day left detached by a
// stop in between is dropped on the next run, and a day someone is reading
// waits for a later run.
const test = testWith();

test.beforeAll(async ({ pool }) => {
  await pool.query("SELECT waypost_create_day_partitions('2020-01-01'::date, '2020-01-04'::date)");
  await pool.query(
    `INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count, lease_token)
     VALUES ('00000000-0000-4000-8000-0000000000e5', nextval('delivery_ids'), 1, '00000000-0000-4000-8000-000000000001',
             'delivered', '2020-01-01T10:00Z', '2020-01-01T10:00:01Z', 1, 1)`,
  );
  // A batch attempt of that day, and one in the default partition (a clock far off).
  await pool.query(
    `INSERT INTO delivery_batch_attempts (destination_id, id, batch_id, url_index, url, attempted_at, outcome, latency_ms, calls, deliveries)
     SELECT '00000000-0000-4000-8000-0000000000e5', gen_random_uuid(), gen_random_uuid(), 0, 'warehouse', t, 'success', 3, 10, 10
       FROM unnest(ARRAY['2020-01-01T10:00Z', '2019-06-01T10:00Z']::timestamptz[]) t`,
  );
}, 60_000);

const days = async (pool: Pool) =>
  (
    await pool.query<{ name: string; attached: boolean }>(
      `SELECT relname AS name, relispartition AS attached FROM pg_class
        WHERE relkind = 'r' AND relname ~ '^delivery_(history|attempts|batch_attempts)_2020' ORDER BY 1`,
    )
  ).rows;

test("days before the cutoff are detached and dropped, a day left detached too; a day being read waits for a later run", async ({
  pool,
}) => {
  // A stop between detaching and dropping left this day detached.
  await pool.query("ALTER TABLE delivery_attempts DETACH PARTITION delivery_attempts_20200102");
  // A long read of one day holds its partition.
  const reader = await pool.connect();
  await reader.query("BEGIN");
  await reader.query("SELECT count(*) FROM delivery_history_20200102");
  try {
    const dropped = await dropDaysBefore(pool, new Date("2020-01-03T00:00:00Z"), 200);
    expect(dropped.map((d) => `${d.table}_${d.day}`).sort()).toEqual([
      "delivery_attempts_20200101",
      "delivery_attempts_20200102",
      "delivery_batch_attempts_20200101",
      "delivery_batch_attempts_20200102",
      "delivery_history_20200101",
    ]);
  } finally {
    await reader.query("COMMIT");
    reader.release();
  }
  expect(await days(pool)).toEqual([
    { name: "delivery_attempts_20200103", attached: true },
    { name: "delivery_attempts_20200104", attached: true },
    { name: "delivery_batch_attempts_20200103", attached: true },
    { name: "delivery_batch_attempts_20200104", attached: true },
    { name: "delivery_history_20200102", attached: true },
    { name: "delivery_history_20200103", attached: true },
    { name: "delivery_history_20200104", attached: true },
  ]);
  // The read is over: the next run drops that day.
  expect(await dropDaysBefore(pool, new Date("2020-01-03T00:00:00Z"), 200)).toEqual([{ table: "delivery_history", day: "20200102" }]);
  expect((await pool.query("SELECT count(*)::int AS n FROM delivery_history WHERE finalized_at < '2020-01-03'")).rows[0].n).toBe(0);
  // Batch attempts go by day too, and those of the default partition past the cutoff are deleted.
  expect((await pool.query("SELECT count(*)::int AS n FROM delivery_batch_attempts WHERE attempted_at < '2020-01-03'")).rows[0].n).toBe(0);
});
