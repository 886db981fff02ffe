import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { placeOnLog } from "../../../src/db/call-log/log-cursors.js";
import { purgeOldLogBatches } from "../../../src/db/call-log/log-retention.js";
import { purgeOldMessages, singleNodeJobTable } from "../../../src/db/job-table/index.js";
import { testWith } from "../../helpers/fixtures.js";

// Retention on the call log: a call a cursor has not read is kept past the
// cutoff (as a queued delivery keeps its call), and delivered batches older
// than the cutoff go.
const test = testWith();

const long = new Date("2026-01-01T00:00:00Z");
const cutoff = new Date("2026-02-01T00:00:00Z");

test("calls past retention that a cursor has not read are kept until it has; then they go", async ({ server, pool }) => {
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "batched",
    sourceIds: [source.id],
    webhooks: [{ url: "https://example.com/hook", batch: { maxCalls: 10 } }],
    enabled: false,
  });
  await placeOnLog(pool, destination.id);
  const calls = ["a", "b", "c"].map((messageId) => ({
    messageId,
    type: "track",
    userId: "u",
    payload: JSON.stringify({ type: "track", messageId, userId: "u", event: "E" }),
    integrations: undefined,
  }));
  await singleNodeJobTable.storeMessages(pool, source.id, long, calls);
  const count = async () => (await pool.query("SELECT count(*)::int AS n FROM messages WHERE source_id = $1", [source.id])).rows[0].n;

  expect(await purgeOldMessages(pool, cutoff, 100)).toBe(0);
  expect(await count()).toBe(3);

  // The cursor read everything committed so far (as a loader's burst leaves it).
  await pool.query("UPDATE log_cursors SET seen = pg_current_snapshot(), up_to = NULL WHERE destination_id = $1", [destination.id]);
  expect(await purgeOldMessages(pool, cutoff, 100)).toBe(3);
  expect(await count()).toBe(0);
});

test("delivered batches that finished before the cutoff are deleted, later ones kept", async ({ pool }) => {
  const destinationId = randomUUID();
  const insert = (finishedAt: Date, toId: number) =>
    pool.query(
      `INSERT INTO log_batches (destination_id, source_id, lane, seen, up_to, from_xid, from_id, to_xid, to_id, calls, delivered, finished_at)
       VALUES ($1, $1, 'live', '1:1:', '2:2:', '1', 0, '1', $3, 1, 1, $2)`,
      [destinationId, finishedAt, toId],
    );
  await insert(long, 1);
  await insert(long, 2);
  await insert(new Date("2026-03-01T00:00:00Z"), 3);
  expect(await purgeOldLogBatches(pool, cutoff, 1)).toBe(1);
  expect(await purgeOldLogBatches(pool, cutoff, 10)).toBe(1);
  const left = await pool.query<{ to_id: string }>("SELECT to_id FROM log_batches WHERE destination_id = $1", [destinationId]);
  expect(left.rows.map((r) => Number(r.to_id))).toEqual([3]);
});
