import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createSyncer } from "../../../../src/audiences/syncer.js";
import { createDeletion } from "../../../../src/deletion/create-deletion.js";
import { citusJobTable } from "../../../../src/db/job-table/index.js";
import type { Pool } from "../../../../src/db/pool.js";
import { citusSkipReason, citusUrl, openCitusTestDatabase } from "../../../helpers/citus.js";

const clock = { now: () => new Date() };

// The producers other than ingest that store messages and queue their
// deliveries: deletion notifications and audience syncs, on the cluster.
describe.skipIf(!citusUrl)(`deliveries queued by deletions and audience syncs on Citus${citusSkipReason}`, () => {
  let pool: Pool;
  let close: () => Promise<void>;
  const sourceId = randomUUID();
  const destinations = [randomUUID(), randomUUID()];
  const audienceId = randomUUID();

  beforeAll(async () => {
    ({ pool, close } = await openCitusTestDatabase());
    await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', 'k')", [sourceId]);
    for (const [i, id] of destinations.entries()) {
      await pool.query(
        `INSERT INTO destinations (id, name, enabled, webhooks, ordering)
         VALUES ($1, $2, true, '[{"url":"https://example.com/","headers":{}}]', 'per_user')`,
        [id, `d${i}`],
      );
      await pool.query("INSERT INTO destination_sources (source_id, destination_id) VALUES ($1, $2)", [sourceId, id]);
    }
    await pool.query(
      "INSERT INTO audiences (id, source_id, name, key, kind, created_at) VALUES ($1, $2, 'VIPs', 'vips', 'audience', now())",
      [audienceId, sourceId],
    );
  }, 120_000);
  afterAll(async () => {
    await close?.();
  });

  async function deliveriesOfType(type: string) {
    const messages = await pool.query<{ id: string; user_id: string }>("SELECT id::text, user_id FROM messages WHERE type = $1", [type]);
    const deliveries = await pool.query<{ destination_id: string; message_pk: string; ordering_key: string | null }>(
      "SELECT destination_id::text, message_pk::text, ordering_key FROM delivery_queue WHERE message_pk = ANY($1::bigint[])",
      [messages.rows.map((row) => row.id)],
    );
    return { messages: messages.rows, deliveries: deliveries.rows };
  }

  test("a deletion stores one notification for the source and queues it to each enabled destination", async () => {
    const created = await createDeletion(
      // Identity resolution is off on Citus (it reads calls by cursor).
      { pool, clock, jobTable: citusJobTable, identity: false },
      { userId: "gone", sourceIds: [sourceId], sourceIndexes: [0] },
    );
    expect(created.notificationsTotal).toBe(2);
    const { messages, deliveries } = await deliveriesOfType("delete");
    expect(messages).toHaveLength(1);
    expect(deliveries.map((row) => row.destination_id).sort()).toEqual([...destinations].sort());
    expect(deliveries.every((row) => row.ordering_key === "gone")).toBe(true);
    const linked = await pool.query("SELECT message_pk::text FROM deletion_request_messages WHERE deletion_request_id = $1", [created.id]);
    expect(linked.rows).toEqual([{ message_pk: messages[0]!.id }]);
  });

  test("an audience sync stores one identify per changed user and queues it to each enabled destination", async () => {
    const syncer = createSyncer({ pool, clock, jobTable: citusJobTable });
    const result = await syncer.run({ id: audienceId, sourceId, key: "vips", kind: "audience" }, [
      { userIds: ["a", "b", "c"], valueTexts: undefined },
    ]);
    expect(result).toMatchObject({ added: 3, deliveries: 6 });
    const { messages, deliveries } = await deliveriesOfType("identify");
    expect(messages.map((row) => row.user_id).sort()).toEqual(["a", "b", "c"]);
    expect(deliveries).toHaveLength(6);
    expect(new Set(deliveries.map((row) => row.message_pk))).toEqual(new Set(messages.map((row) => row.id)));
  });
});
