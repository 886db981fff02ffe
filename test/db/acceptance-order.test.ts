import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { storeMessages, type MessageToStore } from "../../src/db/job-table/store-messages.js";
import { testWith } from "../helpers/fixtures.js";

// Per-user ordering takes delivery ids as acceptance order: they must follow
// the calls' order inside a batch and from one batch to the next.
const test = testWith();
const sourceId = randomUUID();
const destinations = [randomUUID(), randomUUID(), randomUUID()];

test.beforeAll(async ({ pool }) => {
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', 'k')", [sourceId]);
  for (const [i, id] of destinations.entries()) {
    await pool.query(
      `INSERT INTO destinations (id, name, enabled, webhooks, ordering)
       VALUES ($1, $2, true, '[{"url":"https://example.com/","headers":{}}]', $3)`,
      [id, `d${i}`, i < 2 ? "per_user" : "none"],
    );
    await pool.query("INSERT INTO destination_sources (source_id, destination_id) VALUES ($1, $2)", [sourceId, id]);
  }
});

test("delivery ids follow the calls' order within and across batches, and carry the user key where the destination orders", async ({
  pool,
}) => {
  // Several users interleaved; messageIds whose sort order differs from the
  // batch order, so a join that reorders rows would show.
  const batch = (from: number, size: number): MessageToStore[] =>
    Array.from({ length: size }, (_, i) => {
      const seq = from + i;
      const anonymous = seq % 5 === 0;
      return {
        messageId: `${randomUUID()}-${seq}`,
        type: "track",
        userId: anonymous ? "" : `user-${seq % 7}`,
        anonymousId: anonymous ? `anon-${seq % 3}` : "",
        payload: JSON.stringify({ seq }),
        integrations: undefined,
      };
    });
  const at = new Date("2026-11-22T10:00:00Z");
  await storeMessages(pool, sourceId, at, batch(0, 2_000));
  await storeMessages(pool, sourceId, at, batch(2_000, 2_000));
  for (const [index, destinationId] of destinations.entries()) {
    const rows = await pool.query<{ seq: number; ordering_key: string | null }>(
      `SELECT (m.payload::jsonb ->> 'seq')::int AS seq, d.ordering_key
         FROM deliveries d JOIN messages m ON m.id = d.message_pk
        WHERE d.destination_id = $1 ORDER BY d.id`,
      [destinationId],
    );
    expect(rows.rows.map((r) => r.seq)).toEqual(Array.from({ length: 4_000 }, (_, i) => i));
    // The third destination does not order: its deliveries carry no key.
    expect(rows.rows.map((r) => r.ordering_key)).toEqual(
      rows.rows.map((r) => (index === 2 ? null : r.seq % 5 === 0 ? `anon-${r.seq % 3}` : `user-${r.seq % 7}`)),
    );
  }
});
