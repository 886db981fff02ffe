import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { storeMessages, type MessageToStore } from "../../src/db/job-table/store-messages.js";
import { testWith } from "../helpers/fixtures.js";

// One connection: every call below reuses the prepared statement.
// The store statement takes its rows as one JSON parameter with the payload
// spliced in as JSON text: what is stored must still be exactly the text given.
const test = testWith({ database: { max: 1 } });
const sourceId = randomUUID();
const open = randomUUID();
const closed = randomUUID();

test.beforeAll(async ({ pool }) => {
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', 'k')", [sourceId]);
  for (const [id, name, ordering] of [
    [open, "open", "per_user"],
    [closed, "closed", "none"],
  ]) {
    await pool.query(
      `INSERT INTO destinations (id, name, enabled, webhooks, ordering)
       VALUES ($1, $2, true, '[{"url":"https://example.com/","headers":{}}]', $3)`,
      [id, name, ordering],
    );
    await pool.query("INSERT INTO destination_sources (source_id, destination_id) VALUES ($1, $2)", [sourceId, id]);
  }
});

const message = (fields: Partial<MessageToStore>): MessageToStore => ({
  messageId: randomUUID(),
  type: "track",
  userId: "u",
  payload: "{}",
  integrations: undefined,
  ...fields,
});

async function stored(pool: Pool, messageId: string) {
  const result = await pool.query<{ payload: string; user_id: string | null; type: string; destinations: string[] }>(
    `SELECT m.payload, m.user_id, m.type,
            array(SELECT d.destination_id::text FROM deliveries d WHERE d.message_pk = m.id ORDER BY 1) AS destinations
       FROM messages m WHERE m.source_id = $1 AND m.message_id = $2`,
    [sourceId, messageId],
  );
  return result.rows;
}

test("payloads are stored byte for byte: escapes, whitespace, non-ASCII, lone surrogates, NUL escapes", async ({ pool }) => {
  const payloads = [
    JSON.stringify({ event: 'quote " backslash \\ slash / tab \t newline \n', n: 1.5e300, nested: { a: [1, null, true] } }),
    JSON.stringify({ text: "é ü 日本 😀 \u2028 \u2029", lone: "\ud800 and \udfff", nul: "a\u0000b" }),
    '{ "spaced" :  [ 1 , 2 ] ,\n "escaped": "\\u00e9\\/" }',
    "[]",
    '"a string"',
  ];
  const messages = payloads.map((payload) => message({ payload }));
  await storeMessages(pool, sourceId, new Date(), messages);
  for (const [i, m] of messages.entries()) {
    const rows = await stored(pool, m.messageId);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.payload).toBe(payloads[i]);
  }
});

test("fields that need escaping in the JSON parameter arrive intact; an empty userId is stored as NULL", async ({ pool }) => {
  const odd = message({ messageId: `id "with" \\ quotes\n${randomUUID()}`, type: "identify", userId: 'user "é" \\' });
  const anonymous = message({ userId: "", anonymousId: "anon" });
  await storeMessages(pool, sourceId, new Date(), [odd, anonymous]);
  expect((await stored(pool, odd.messageId))[0]).toMatchObject({ type: "identify", user_id: 'user "é" \\' });
  expect((await stored(pool, anonymous.messageId))[0]!.user_id).toBeNull();
  const keys = await pool.query<{ message_id: string; destination_id: string; ordering_key: string | null }>(
    `SELECT m.message_id, d.destination_id, d.ordering_key FROM deliveries d JOIN messages m ON m.id = d.message_pk
      WHERE m.message_id = ANY($1)`,
    [[odd.messageId, anonymous.messageId]],
  );
  const keyOf = (destinationId: string) =>
    Object.fromEntries(keys.rows.filter((r) => r.destination_id === destinationId).map((r) => [r.message_id, r.ordering_key]));
  expect(keyOf(open)).toEqual({ [odd.messageId]: 'user "é" \\', [anonymous.messageId]: "anon" });
  // A destination without per-user ordering gets no key (its deliveries stay out of the ordering index).
  expect(keyOf(closed)).toEqual({ [odd.messageId]: null, [anonymous.messageId]: null });
});

test("integrations route in SQL: absent goes everywhere, a destination turned off gets nothing", async ({ pool }) => {
  const everywhere = message({});
  const notClosed = message({ integrations: { closed: false } });
  const none = message({ integrations: { All: false } });
  await storeMessages(pool, sourceId, new Date(), [everywhere, notClosed, none]);
  expect((await stored(pool, everywhere.messageId))[0]!.destinations).toEqual([open, closed].sort());
  expect((await stored(pool, notClosed.messageId))[0]!.destinations).toEqual([open]);
  expect((await stored(pool, none.messageId))[0]!.destinations).toEqual([]);
});

test("a messageId the source already has is neither stored again nor delivered again", async ({ pool }) => {
  const first = message({ payload: JSON.stringify({ v: 1 }) });
  await storeMessages(pool, sourceId, new Date(), [first]);
  const fresh = message({});
  await storeMessages(pool, sourceId, new Date(), [{ ...first, payload: JSON.stringify({ v: 2 }) }, fresh]);
  const rows = await stored(pool, first.messageId);
  expect(rows).toHaveLength(1);
  expect(rows[0]!.payload).toBe(JSON.stringify({ v: 1 }));
  expect(rows[0]!.destinations).toHaveLength(2);
  expect((await stored(pool, fresh.messageId))[0]!.destinations).toHaveLength(2);
});
