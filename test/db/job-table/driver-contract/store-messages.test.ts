import { randomUUID } from "node:crypto";
import { beforeAll, expect, test } from "vitest";
import { emptyCall } from "../../../../src/calls/call.js";
import { systemClock } from "../../../../src/clock.js";
import { matcherOfRow } from "../../../../src/delivery/kinds/registry.js";
import { createIngestor } from "../../../../src/ingest/ingestor.js";
import type { MessageToStore } from "../../../../src/db/job-table/store-messages.js";
import { NotFoundError } from "../../../../src/errors.js";
import { describeEachDriver } from "./drivers.js";

// Ingest: calls stored and routed to their deliveries and fates in one
// transaction (on Citus, messages, their keys, their deliveries and their
// fates are on different shards).
describeEachDriver("storing calls", (driver, db) => {
  const sourceId = randomUUID();
  const ordered = randomUUID();
  const plain = randomUUID();
  const disabled = randomUUID();
  const consent = randomUUID();

  beforeAll(async () => {
    const { pool } = db;
    await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', 'k')", [sourceId]);
    for (const [id, name, ordering, enabled, categories] of [
      [ordered, "ordered", "per_user", true, "{}"],
      [plain, "plain", "none", true, "{}"],
      [disabled, "disabled", "none", false, "{}"],
      [consent, "consent", "none", true, "{ads}"],
    ] as const) {
      await pool.query(
        `INSERT INTO destinations (id, name, enabled, webhooks, ordering, consent_categories)
         VALUES ($1, $2, $3, '[{"url":"https://example.com/","headers":{}}]', $4, $5)`,
        [id, name, enabled, ordering, categories],
      );
      await pool.query("INSERT INTO destination_sources (source_id, destination_id) VALUES ($1, $2)", [sourceId, id]);
    }
  });

  // The rules in force: the consent destination holds calls back (revision 1).
  const stamp = () => JSON.stringify({ [consent]: 1 });

  const message = (fields: Partial<MessageToStore> = {}): MessageToStore => ({
    messageId: randomUUID(),
    type: "track",
    userId: "u",
    payload: "{}",
    integrations: undefined,
    ...fields,
  });

  async function deliveriesOf(messageIds: string[]) {
    const messages = await db.pool.query<{ id: string; message_id: string }>(
      "SELECT id::text, message_id FROM messages WHERE source_id = $1 AND message_id = ANY($2)",
      [sourceId, messageIds],
    );
    const byPk = new Map(messages.rows.map((row) => [row.id, row.message_id]));
    const deliveries = await db.pool.query<{ id: string; destination_id: string; message_pk: string; ordering_key: string | null }>(
      "SELECT id::text, destination_id::text, message_pk::text, ordering_key FROM delivery_queue q WHERE message_pk = ANY($1::bigint[]) ORDER BY q.id",
      [[...byPk.keys()]],
    );
    const fates = await db.pool.query<{ destination_id: string; message_pk: string; fate: string; reason: string | null }>(
      "SELECT destination_id::text, message_pk::text, fate, reason FROM call_fates WHERE message_pk = ANY($1::bigint[])",
      [[...byPk.keys()]],
    );
    return {
      messages: messages.rows,
      deliveries: deliveries.rows.map((row) => ({ ...row, messageId: byPk.get(row.message_pk)! })),
      fates: fates.rows.map((row) => ({ ...row, messageId: byPk.get(row.message_pk)! })),
    };
  }

  test("stores the calls byte for byte and routes them: deliveries, fates and the filtered counts", async () => {
    const payloads = ['{ "spaced" :  [ 1 , 2 ] ,\n "escaped": "\\u00e9\\/" }', JSON.stringify({ text: "é 😀", nul: "a\u0000b" })];
    const first = message({ payload: payloads[0], userId: "", anonymousId: "anon-1" });
    const second = message({ payload: payloads[1], integrations: { plain: false } });
    const third = message({ filteredOut: { [consent]: "consent" }, integrations: { All: false, Webhooks: true } });
    const result = await driver.storeMessages(db.pool, sourceId, new Date(), [first, second, third], stamp());
    expect(result).toEqual({ fresh: true, queued: true, filtered: [[consent, "consent", 1]] });
    const stored = await db.pool.query<{ message_id: string; payload: string; user_id: string | null }>(
      "SELECT message_id, payload, user_id FROM messages WHERE message_id = ANY($1)",
      [[first.messageId, second.messageId]],
    );
    const byId = new Map(stored.rows.map((row) => [row.message_id, row]));
    expect(byId.get(first.messageId)).toMatchObject({ payload: payloads[0], user_id: null });
    expect(byId.get(second.messageId)).toMatchObject({ payload: payloads[1], user_id: "u" });
    const { deliveries, fates } = await deliveriesOf([first.messageId, second.messageId, third.messageId]);
    const pairs = (rows: Array<{ messageId: string; destination_id: string }>, extra: (row: never) => unknown) =>
      rows.map((row) => [row.messageId, row.destination_id, extra(row as never)]).sort();
    expect(pairs(deliveries, (row: { ordering_key: string | null }) => row.ordering_key)).toEqual(
      [
        [first.messageId, ordered, "anon-1"],
        [first.messageId, plain, null],
        [first.messageId, consent, null],
        [second.messageId, ordered, "u"],
        [second.messageId, consent, null],
        [third.messageId, ordered, "u"],
        [third.messageId, plain, null],
      ].sort(),
    );
    expect(pairs(fates, (row: { fate: string; reason: string | null }) => `${row.fate}/${row.reason}`)).toEqual(
      [
        [first.messageId, disabled, "disabled/null"],
        [second.messageId, disabled, "disabled/null"],
        [second.messageId, plain, "integrations_off/null"],
        [third.messageId, disabled, "disabled/null"],
        [third.messageId, consent, "filtered/consent"],
      ].sort(),
    );
  });

  test("delivery ids follow the calls' order in the batch", async () => {
    const batch = Array.from({ length: 40 }, (_, i) => message({ userId: `user-${i % 3}` }));
    await driver.storeMessages(db.pool, sourceId, new Date(), batch, stamp());
    const { deliveries } = await deliveriesOf(batch.map((m) => m.messageId));
    const toOrdered = deliveries.filter((row) => row.destination_id === ordered);
    expect(toOrdered.map((row) => row.messageId)).toEqual(batch.map((m) => m.messageId));
    const all = deliveries.map((row) => batch.findIndex((m) => m.messageId === row.messageId));
    expect(all).toEqual([...all].sort((a, b) => a - b));
  });

  test("a repeated messageId is acknowledged and not stored again, in a later batch and concurrently", async () => {
    const once = message();
    await driver.storeMessages(db.pool, sourceId, new Date(), [once], stamp());
    const again = await driver.storeMessages(
      db.pool,
      sourceId,
      new Date(),
      [once, message({ messageId: `${once.messageId}-new` })],
      stamp(),
    );
    expect(again.fresh).toBe(true);
    const twice = await deliveriesOf([once.messageId]);
    expect(twice.messages).toHaveLength(1);
    expect(twice.deliveries).toHaveLength(3);
    expect((await deliveriesOf([`${once.messageId}-new`])).messages).toHaveLength(1);

    const raced = message();
    await Promise.all(Array.from({ length: 4 }, () => driver.storeMessages(db.pool, sourceId, new Date(), [raced], stamp())));
    const stored = await deliveriesOf([raced.messageId]);
    expect(stored.messages).toHaveLength(1);
    expect(stored.deliveries).toHaveLength(3);
  });

  test("stale rules store nothing; an unknown source is not found", async () => {
    const stale = message();
    const result = await driver.storeMessages(db.pool, sourceId, new Date(), [stale], "{}");
    expect(result).toEqual({ fresh: false, filtered: [], queued: false });
    expect((await deliveriesOf([stale.messageId])).messages).toHaveLength(0);
    // Nothing of it was kept (on Citus, not its de-duplication key either): with the rules in force it stores.
    await driver.storeMessages(db.pool, sourceId, new Date(), [stale], stamp());
    expect((await deliveriesOf([stale.messageId])).deliveries).toHaveLength(3);
    await expect(driver.storeMessages(db.pool, randomUUID(), new Date(), [message()], "{}")).rejects.toBeInstanceOf(NotFoundError);
  });

  test("one transaction: a call refused half-way leaves no key behind, and a caller's rollback takes everything back", async () => {
    const refused = message({ type: "not-a-type" });
    await expect(driver.storeMessages(db.pool, sourceId, new Date(), [refused], stamp())).rejects.toThrow(/messages_type_check/);
    // Its key was not kept: the same messageId stores now.
    await driver.storeMessages(db.pool, sourceId, new Date(), [{ ...refused, type: "track" }], stamp());
    expect((await deliveriesOf([refused.messageId])).deliveries).toHaveLength(3);

    const client = await db.pool.connect();
    const undone = message();
    try {
      await client.query("BEGIN");
      const result = await driver.storeMessages(client, sourceId, new Date(), [undone], stamp());
      expect(result.queued).toBe(true);
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    expect((await deliveriesOf([undone.messageId])).messages).toHaveLength(0);
    await driver.storeMessages(db.pool, sourceId, new Date(), [undone], stamp());
    expect((await deliveriesOf([undone.messageId])).deliveries).toHaveLength(3);
  });

  test("the ingestor stores through the driver it is given: from the pool, and inside a caller's transaction", async () => {
    let wakes = 0;
    const ingestor = createIngestor({
      pool: db.pool,
      clock: systemClock,
      jobTable: driver,
      onQueued: () => wakes++,
      kindMatcher: matcherOfRow,
    });
    const track = (messageId: string) => ({ ...emptyCall("track"), messageId, userId: "ingested", event: "Order Completed" });
    const [one, two] = [randomUUID(), randomUUID()];
    // The ingestor reads the source's rules (and their stamp) itself: a stale stamp would store nothing.
    const result = await ingestor.ingest(sourceId, [track(one), track(one), track(two)]);
    expect(result).toMatchObject({ accepted: 3, rejected: [] });
    expect(wakes).toBe(1);
    const stored = await deliveriesOf([one, two]);
    expect(stored.messages).toHaveLength(2);
    expect(stored.deliveries).toHaveLength(6);
    expect(stored.fates.map((f) => [f.destination_id, f.fate])).toEqual([
      [disabled, "disabled"],
      [disabled, "disabled"],
    ]);

    const inTransaction = randomUUID();
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      await ingestor.ingest(sourceId, [track(inTransaction)], { db: client });
      // Not visible to others before the caller commits.
      expect((await deliveriesOf([inTransaction])).messages).toHaveLength(0);
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    expect((await deliveriesOf([inTransaction])).deliveries).toHaveLength(3);
  });
});
