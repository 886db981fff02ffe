import { describe, expect } from "vitest";
import { callRpc, okRpc } from "../api/access/access-fixtures.js";
import { testWith } from "../helpers/fixtures.js";
import { startTestServer } from "../helpers/server.js";

// A deletion request for any identifier forgets the whole person, and no
// later call brings them back.

const test = testWith({ server: { config: { role: "api" } } });

async function messageIdsOf(
  pool: { query: (sql: string, values: unknown[]) => Promise<{ rows: Array<{ message_id: string }> }> },
  sourceId: string,
) {
  const { rows } = await pool.query("SELECT message_id FROM messages WHERE source_id = $1 AND type <> 'delete' ORDER BY id", [sourceId]);
  return rows.map((row) => row.message_id);
}

describe("deleting a person", () => {
  test("by an anonymous id deletes every call of every id of the profile, and notifies for its userId", async ({ server, receiver }) => {
    const worker = await startTestServer({ database: server.database, config: { role: "worker" } });
    try {
      const source = await server.createSource();
      const other = await server.createSource();
      await server.createDestination({ name: "tool", sourceIds: [source.id], enabled: true, webhooks: [{ url: receiver.url }] });
      const tracking = server.tracking(source.writeKey);
      await tracking.track({ track: { anonymousId: "a1", event: "Opened", messageId: "c1" } });
      await tracking.identify({ identify: { userId: "u1", anonymousId: "a1", messageId: "c2" } });
      await tracking.track({ track: { userId: "u1", event: "Paid", messageId: "c3" } });
      await tracking.track({ track: { anonymousId: "a2", event: "Opened", messageId: "c4" } });
      await tracking.identify({ identify: { userId: "u1", anonymousId: "a2", messageId: "c5" } });
      await server.tracking(other.writeKey).track({ track: { anonymousId: "someone-else", event: "Opened", messageId: "x1" } });
      await worker.waypost.identity!.caughtUp();

      const created = await okRpc(server, "DeletionService/CreateDeletionRequest", { userId: "a2", identifierType: "anonymous_id" });
      const request = created.deletionRequest as { messagesDeleted: string; notificationsTotal: string; identifierType: string };
      expect(request.identifierType).toBe("anonymous_id");
      expect(Number(request.messagesDeleted)).toBe(5);
      expect(Number(request.notificationsTotal)).toBe(1);
      expect(await messageIdsOf(server.pool, source.id)).toEqual([]);
      expect(await messageIdsOf(server.pool, other.id)).toEqual(["x1"]);
      const { rows: deletes } = await server.pool.query("SELECT payload FROM messages WHERE source_id = $1 AND type = 'delete'", [
        source.id,
      ]);
      expect(JSON.parse(deletes[0].payload).userId).toBe("u1");
      expect((await callRpc(server, "ProfileService/GetProfile", { identifier: { type: "user_id", value: "u1" } })).code).toBe("not_found");
      const { rows: left } = await server.pool.query("SELECT type, value FROM profile_identifiers WHERE value IN ('a1', 'a2', 'u1')");
      expect(left).toEqual([]);

      const unknownType = await callRpc(server, "DeletionService/CreateDeletionRequest", { userId: "x", identifierType: "shoe_size" });
      expect(unknownType.code).toBe("invalid_argument");
      expect(unknownType.message).toContain("identifierType");
    } finally {
      await worker.stop();
    }
  });

  test("calls received before the deletion and resolved after go too; later calls make a new profile with nothing of the old", async ({
    server,
  }) => {
    const worker = await startTestServer({ database: server.database, config: { role: "worker" } });
    try {
      const source = await server.createSource();
      const tracking = server.tracking(source.writeKey);
      await tracking.track({ track: { anonymousId: "b1", event: "Opened", messageId: "d1" } });
      await tracking.identify({ identify: { userId: "u2", anonymousId: "b1", traits: { plan: "pro" }, messageId: "d2" } });
      await worker.waypost.identity!.caughtUp();
      // The resolver stops: the next call waits, unresolved, through the deletion.
      await worker.stopService();
      await tracking.track({ track: { anonymousId: "b1", event: "Scrolled", messageId: "d3" } });
      await okRpc(server, "DeletionService/CreateDeletionRequest", { userId: "u2" });
      await tracking.identify({ identify: { userId: "u2", anonymousId: "b2", traits: { name: "New" }, messageId: "d4" } });
      await worker.startService();
      await worker.waypost.identity!.caughtUp();

      expect(await messageIdsOf(server.pool, source.id)).toEqual(["d4"]);
      const found = await okRpc(server, "ProfileService/GetProfile", { identifier: { type: "user_id", value: "u2" } });
      const profile = found.profile as { identifiers: Array<{ value: string }>; traits: Record<string, unknown>; calls: string };
      expect(profile.identifiers.map((i) => i.value).sort()).toEqual(["b2", "u2"]);
      expect(Object.keys(profile.traits)).toEqual(["name"]);
      expect(profile.calls).toBe("1");
    } finally {
      await worker.stop();
    }
  });

  test("a deletion limited to one source leaves the other sources' calls resolved after it alone", async ({ server }) => {
    const worker = await startTestServer({ database: server.database, config: { role: "worker" } });
    try {
      const [kept, forgotten] = [await server.createSource(), await server.createSource()];
      await server.tracking(kept.writeKey).identify({ identify: { userId: "u3", anonymousId: "c1", messageId: "k1" } });
      await worker.waypost.identity!.caughtUp();
      // Unresolved through the deletion: one call in each source, both of the person.
      await worker.stopService();
      await server.tracking(kept.writeKey).track({ track: { anonymousId: "c1", event: "Opened", messageId: "k2" } });
      await server.tracking(forgotten.writeKey).track({ track: { anonymousId: "c1", event: "Opened", messageId: "f1" } });
      await okRpc(server, "DeletionService/CreateDeletionRequest", { userId: "u3", sourceIds: [forgotten.id] });
      await worker.startService();
      await worker.waypost.identity!.caughtUp();

      expect(await messageIdsOf(server.pool, kept.id)).toEqual(["k1", "k2"]);
      expect(await messageIdsOf(server.pool, forgotten.id)).toEqual([]);
    } finally {
      await worker.stop();
    }
  });
});
