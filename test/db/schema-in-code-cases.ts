import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { detectJobTableLayout, type JobTableLayout } from "../../src/db/citus/layout.js";
import { purgeOldMessages } from "../../src/db/job-table/purge.js";
import { type Pool, withTransaction } from "../../src/db/pool.js";
import { deleteUserMessages } from "../../src/db/queries/deletion-user-data.js";
import { deleteDestinationRow, emptyKindColumns, insertDestination, replaceDestinationSources } from "../../src/db/queries/destinations.js";
import { keyQueuedDeliveries } from "../../src/db/job-table/ordering-keys.js";
import { deleteSourceRow, insertSource } from "../../src/db/queries/sources.js";

/**
 * The work of the four triggers migration 27 dropped, now done by the code
 * (reference tables on Citus carry no triggers, and distributed tables take
 * no cascades from them): the same cases on one Postgres and on the Citus
 * cluster, each failing if the code that replaced its trigger went. Call
 * inside a describe; `open` gives a migrated database of the file's own.
 */
export function schemaInCodeCases(layout: JobTableLayout, open: () => Promise<{ pool: Pool; close(): Promise<void> }>): void {
  let pool: Pool;
  let close: () => Promise<void>;
  const now = new Date();
  const old = new Date(now.getTime() - 40 * 86_400_000);

  beforeAll(async () => {
    ({ pool, close } = await open());
    expect(await detectJobTableLayout(pool)).toBe(layout);
  }, 180_000);
  afterAll(() => close?.());

  async function newDestination(sourceIds: string[] = []): Promise<string> {
    const id = randomUUID();
    await withTransaction(pool, async (tx) => {
      await insertDestination(tx, {
        id,
        name: "hook",
        enabled: true,
        kind: "webhook",
        columns: { ...emptyKindColumns, webhooks: [{ url: "https://example.com/hook", headers: {} }] },
        maxRequestsPerSecond: 10,
        ordering: "none",
        filter: null,
        dropFields: [],
        transform: "",
        consentCategories: [],
        requireConsent: false,
        addProfileId: false,
        at: now,
      });
      await replaceDestinationSources(tx, id, sourceIds);
    });
    return id;
  }

  async function newSource(): Promise<string> {
    const id = randomUUID();
    await insertSource(pool, { id, name: "s", writeKeyHash: Buffer.from(id) });
    return id;
  }

  /** A stored call as ingest leaves it: the message and, on Citus, its de-duplication key. */
  async function storeMessage(
    sourceId: string,
    fields: { userId?: string; anonymousId?: string; receivedAt?: Date } = {},
  ): Promise<string> {
    const messageId = randomUUID();
    const payload = JSON.stringify({ messageId, userId: fields.userId, anonymousId: fields.anonymousId });
    const row = await pool.query<{ id: string }>(
      "INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload) VALUES ($1, $2, 'track', $3, $4, $5) RETURNING id",
      [sourceId, messageId, fields.userId ?? null, fields.receivedAt ?? now, payload],
    );
    const pk = row.rows[0]!.id;
    if (layout === "citus") {
      await pool.query("INSERT INTO message_keys (message_id, source_id, message_pk) VALUES ($1, $2, $3)", [messageId, sourceId, pk]);
    }
    return pk;
  }

  async function queue(destinationId: string, sourceId: string, messagePk: string): Promise<string> {
    const row = await pool.query<{ id: string }>(
      "INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at) VALUES ($1, $2, $3, $4, $4) RETURNING id",
      [destinationId, messagePk, sourceId, now],
    );
    return row.rows[0]!.id;
  }

  /** A finished delivery with one attempt (finished now: its day's partitions exist). */
  async function finished(destinationId: string, sourceId: string, messagePk: string): Promise<string> {
    const id = (await pool.query<{ id: string }>("SELECT nextval('delivery_ids')::text AS id")).rows[0]!.id;
    await pool.query(
      `INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count, lease_token)
       VALUES ($1, $2, $3, $4, 'delivered', $5, $5, 1, 1)`,
      [destinationId, id, messagePk, sourceId, now],
    );
    await attempt(destinationId, id);
    return id;
  }

  async function attempt(destinationId: string, deliveryId: string): Promise<void> {
    await pool.query(
      `INSERT INTO delivery_attempts (destination_id, delivery_id, attempt, url_index, url, attempted_at, outcome, latency_ms)
       VALUES ($1, $2, 1, 0, 'https://example.com/hook', $3, 'success', 5)`,
      [destinationId, deliveryId, now],
    );
  }

  const count = async (sql: string, params: unknown[]) =>
    (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params)).rows[0]!.n;

  /** What hangs off these messages, table by table. */
  async function leftOf(messagePks: string[]) {
    const byPk = "WHERE message_pk = ANY($1::bigint[])";
    return {
      messages: await count("messages WHERE id = ANY($1::bigint[])", [messagePks]),
      // One Postgres de-duplicates by the messages' own unique key: as many "keys" as messages.
      keys:
        layout === "citus"
          ? await count(`message_keys ${byPk}`, [messagePks])
          : await count("messages WHERE id = ANY($1::bigint[])", [messagePks]),
      queued: await count(`delivery_queue ${byPk}`, [messagePks]),
      finished: await count(`delivery_history ${byPk}`, [messagePks]),
      fates: await count(`call_fates ${byPk}`, [messagePks]),
    };
  }
  const attemptsOf = (deliveryIds: string[]) => count("delivery_attempts WHERE delivery_id = ANY($1::bigint[])", [deliveryIds]);

  it("creating a destination writes its empty rate bucket", async () => {
    const id = await newDestination();
    const bucket = await pool.query("SELECT tokens, refilled_at FROM destination_rate_buckets WHERE destination_id = $1", [id]);
    expect(bucket.rows).toEqual([{ tokens: 0, refilled_at: now }]);
  });

  it("deleting a destination removes its bucket, health and fates, and no other's", async () => {
    const source = await newSource();
    const [gone, kept] = [await newDestination([source]), await newDestination([source])];
    const pk = await storeMessage(source, { userId: "u" });
    for (const id of [gone, kept]) {
      await pool.query("INSERT INTO destination_health (destination_id, updated_at) VALUES ($1, $2)", [id, now]);
      await pool.query("INSERT INTO call_fates (message_pk, destination_id, fate, recorded_at) VALUES ($1, $2, 'disabled', $3)", [
        pk,
        id,
        now,
      ]);
    }
    await withTransaction(pool, (tx) => deleteDestinationRow(tx, gone));
    const rows = async (id: string) => ({
      destination: await count("destinations WHERE id = $1", [id]),
      bucket: await count("destination_rate_buckets WHERE destination_id = $1", [id]),
      health: await count("destination_health WHERE destination_id = $1", [id]),
      fates: await count("call_fates WHERE destination_id = $1", [id]),
    });
    expect(await rows(gone)).toEqual({ destination: 0, bucket: 0, health: 0, fates: 0 });
    expect(await rows(kept)).toEqual({ destination: 1, bucket: 1, health: 1, fates: 1 });
  });

  it("turning per-user ordering on keys the destination's queued deliveries from their messages", async () => {
    const source = await newSource();
    const destination = await newDestination([source]);
    const other = await newDestination([source]);
    const pks = [
      await storeMessage(source, { userId: "u1" }),
      await storeMessage(source, { anonymousId: "anon-1" }),
      await storeMessage(source, {}),
    ];
    for (const pk of pks) await queue(destination, source, pk);
    await queue(other, source, pks[0]!);
    const keyed = await withTransaction(pool, async (tx) => {
      await tx.query("UPDATE destinations SET ordering = 'per_user' WHERE id = $1", [destination]);
      return keyQueuedDeliveries(tx, destination);
    });
    expect(keyed).toBe(2);
    const keys = await pool.query("SELECT ordering_key FROM delivery_queue WHERE destination_id = $1 ORDER BY id", [destination]);
    expect(keys.rows.map((r) => r.ordering_key)).toEqual(["u1", "anon-1", null]);
    const untouched = await pool.query("SELECT ordering_key FROM delivery_queue WHERE destination_id = $1", [other]);
    expect(untouched.rows).toEqual([{ ordering_key: null }]);
  });

  it("deleting a source removes its messages, their deliveries, attempts, fates and keys, and its webhook requests", async () => {
    const [source, kept] = [await newSource(), await newSource()];
    const destination = await newDestination([source, kept]);
    const pks = [await storeMessage(source, { userId: "u" }), await storeMessage(source, { userId: "v" })];
    const queuedId = await queue(destination, source, pks[0]!);
    await attempt(destination, queuedId);
    const finishedId = await finished(destination, source, pks[1]!);
    await pool.query("INSERT INTO call_fates (message_pk, destination_id, fate, recorded_at) VALUES ($1, $2, 'disabled', $3)", [
      pks[1],
      destination,
      now,
    ]);
    await pool.query(
      "INSERT INTO hook_requests (source_id, received_at, method, headers, body, status) VALUES ($1, $2, 'POST', '{}', '', 'processed')",
      [source, now],
    );
    await pool.query("INSERT INTO hook_source_leases (source_id, lease_id, lease_until) VALUES ($1, gen_random_uuid(), $2)", [source, now]);
    const keptPk = await storeMessage(kept, { userId: "u" });
    const keptId = await finished(destination, kept, keptPk);

    expect(await deleteSourceRow(pool, source)).toBe(true);
    expect(await leftOf(pks)).toEqual({ messages: 0, keys: 0, queued: 0, finished: 0, fates: 0 });
    expect(await attemptsOf([queuedId, finishedId])).toBe(0);
    expect(await count("hook_source_leases WHERE source_id = $1", [source])).toBe(0);
    expect(await count("hook_requests WHERE source_id = $1", [source])).toBe(0);
    expect(await leftOf([keptPk])).toEqual({ messages: 1, keys: 1, queued: 0, finished: 1, fates: 0 });
    expect(await attemptsOf([keptId])).toBe(1);
  });

  it("a user's deletion removes their messages with what hangs off them", async () => {
    const source = await newSource();
    const destination = await newDestination([source]);
    const doomed = await storeMessage(source, { userId: "doomed" });
    const kept = await storeMessage(source, { userId: "kept" });
    const ids = [await finished(destination, source, doomed), await finished(destination, source, kept)];
    expect(await withTransaction(pool, (tx) => deleteUserMessages(tx, [source], "doomed"))).toBe(1);
    expect(await leftOf([doomed])).toEqual({ messages: 0, keys: 0, queued: 0, finished: 0, fates: 0 });
    expect(await attemptsOf([ids[0]!])).toBe(0);
    expect(await leftOf([kept])).toMatchObject({ messages: 1, keys: 1, finished: 1 });
    expect(await attemptsOf([ids[1]!])).toBe(1);
  });

  it("the purge removes old finished messages with their history and attempts, and keeps queued and recent ones", async () => {
    const source = await newSource();
    const destination = await newDestination([source]);
    const oldDone = await storeMessage(source, { userId: "a", receivedAt: old });
    const oldQueued = await storeMessage(source, { userId: "b", receivedAt: old });
    const recent = await storeMessage(source, { userId: "c" });
    const doneId = await finished(destination, source, oldDone);
    await queue(destination, source, oldQueued);
    const recentId = await finished(destination, source, recent);

    const cutoff = new Date(now.getTime() - 86_400_000);
    expect(await purgeOldMessages(pool, cutoff, 100)).toBe(1);
    expect(await leftOf([oldDone])).toEqual({ messages: 0, keys: 0, queued: 0, finished: 0, fates: 0 });
    expect(await attemptsOf([doneId])).toBe(0);
    expect(await leftOf([oldQueued])).toMatchObject({ messages: 1, keys: 1, queued: 1 });
    expect(await leftOf([recent])).toMatchObject({ messages: 1, keys: 1, finished: 1 });
    expect(await attemptsOf([recentId])).toBe(1);
    expect(await purgeOldMessages(pool, cutoff, 100)).toBe(0);
  });
}
