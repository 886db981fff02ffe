import { describe, expect } from "vitest";
import { okRpc } from "../api/access/access-fixtures.js";
import { testWith } from "../helpers/fixtures.js";

// Audiences and computed traits over profiles: a sync lists profile ids,
// and each person gets the identify call under their userId.

const test = testWith({ server: { config: { role: "all" } } });

describe("audiences by profile", () => {
  test("sync profile ids: a person counts once under any of their profile ids; one without a userId is skipped", async ({ server }) => {
    const source = await server.createSource();
    const tracking = server.tracking(source.writeKey);
    await tracking.track({ track: { anonymousId: "dee-phone", event: "Opened" } });
    await tracking.track({ track: { anonymousId: "dee-laptop", event: "Opened" } });
    await tracking.identify({ identify: { userId: "dee", anonymousId: "dee-phone" } });
    await tracking.identify({ identify: { userId: "dee", anonymousId: "dee-laptop" } });
    await tracking.identify({ identify: { userId: "eli", anonymousId: "eli-phone" } });
    await tracking.track({ track: { anonymousId: "nobody-yet", event: "Opened" } });
    await server.waypost.identity!.caughtUp();
    const get = async (type: string, value: string) =>
      (await okRpc(server, "ProfileService/GetProfile", { identifier: { type, value } })).profile as { id: string; mergedIds: string[] };
    const [dee, eli, anonymous] = [await get("user_id", "dee"), await get("user_id", "eli"), await get("anonymous_id", "nobody-yet")];

    const created = await okRpc(server, "AudienceService/CreateAudience", {
      audience: { sourceId: source.id, name: "Loyal People", byProfile: true },
    });
    const audience = created.audience as { id: string; byProfile: boolean };
    expect(audience.byProfile).toBe(true);
    const synced = await okRpc(server, "AudienceService/SyncAudience", {
      audienceId: audience.id,
      userIds: [dee.id, dee.mergedIds[0], eli.id, anonymous.id, "3f1c5c3e-4f51-4c8e-9f57-8f3c1d2b7a10"],
    });
    expect(synced.counts).toMatchObject({ added: "2", calls: "2", skipped: "3" });
    const { rows } = await server.pool.query(
      "SELECT user_id, payload::jsonb -> 'traits' AS traits FROM messages WHERE source_id = $1 AND type = 'identify' AND payload LIKE '%loyal_people%' ORDER BY user_id",
      [source.id],
    );
    expect(rows).toEqual([
      { user_id: "dee", traits: { loyal_people: true } },
      { user_id: "eli", traits: { loyal_people: true } },
    ]);
    // Dropping Eli: one false for him, nothing for Dee.
    const again = await okRpc(server, "AudienceService/SyncAudience", { audienceId: audience.id, userIds: [dee.mergedIds[0]] });
    expect(again.counts).toMatchObject({ removed: "1", calls: "1" });
  });
});
