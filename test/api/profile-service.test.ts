import { describe, expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { callRpc, okRpc } from "./access/access-fixtures.js";

const test = testWith({
  server: { config: { role: "all" } },
});

describe("ProfileService", () => {
  test("finds a person by any of their ids, pages their timeline across ids, searches, and tells their history", async ({ server }) => {
    const source = await server.createSource();
    const tracking = server.tracking(source.writeKey);
    await tracking.track({ track: { anonymousId: "phone-1", event: "Opened App" } });
    await tracking.track({ track: { anonymousId: "laptop-1", event: "Viewed Pricing" } });
    await tracking.identify({ identify: { userId: "ada", anonymousId: "phone-1", traits: { plan: "pro", email: "ada@example.com" } } });
    await tracking.identify({ identify: { userId: "ada", anonymousId: "laptop-1" } });
    await tracking.identify({ identify: { userId: "bob", anonymousId: "laptop-1" } });
    await server.waypost.identity!.caughtUp();

    const byUser = await okRpc(server, "ProfileService/GetProfile", { identifier: { type: "user_id", value: "ada" } });
    const profile = byUser.profile as {
      id: string;
      mergedIds: string[];
      identifiers: Array<{ type: string; value: string }>;
      traits: Record<string, { value: unknown }>;
      calls: string;
      eventCounts: Record<string, string>;
    };
    expect(profile.identifiers.map((i) => `${i.type}:${i.value}`).sort()).toEqual([
      "anonymous_id:laptop-1",
      "anonymous_id:phone-1",
      "user_id:ada",
    ]);
    expect(profile.traits.plan?.value).toBe("pro");
    expect(profile.calls).toBe("4");
    expect(profile.eventCounts).toMatchObject({ "Opened App": "1", "Viewed Pricing": "1", "(identify)": "2" });
    expect(profile.mergedIds).toHaveLength(1);

    const byMergedId = await okRpc(server, "ProfileService/GetProfile", { profileId: profile.mergedIds[0] });
    expect((byMergedId.profile as { id: string }).id).toBe(profile.id);
    const byDevice = await okRpc(server, "ProfileService/GetProfile", { identifier: { type: "anonymous_id", value: "laptop-1" } });
    expect((byDevice.profile as { id: string }).id).toBe(profile.id);

    const first = await okRpc(server, "ProfileService/ListProfileEvents", { profileId: profile.id, pageSize: 3 });
    const events = first.events as Array<{ name: string; type: string }>;
    expect(events.map((event) => event.type)).toEqual(["identify", "identify", "track"]);
    const rest = await okRpc(server, "ProfileService/ListProfileEvents", {
      profileId: profile.id,
      pageSize: 3,
      pageToken: first.nextPageToken,
    });
    expect((rest.events as Array<{ name: string }>).map((event) => event.name)).toEqual(["Opened App"]);
    expect(rest.nextPageToken ?? "").toBe("");

    const byTrait = await okRpc(server, "ProfileService/SearchProfiles", { traitKey: "plan", traitValue: "pro" });
    expect((byTrait.profiles as Array<{ id: string }>).map((p) => p.id)).toEqual([profile.id]);
    const byPrefix = await okRpc(server, "ProfileService/SearchProfiles", { identifierPrefix: "bo", identifierType: "user_id" });
    expect((byPrefix.profiles as Array<{ identifiers: Array<{ value: string }> }>)[0]!.identifiers.map((i) => i.value)).toEqual(["bob"]);
    const wildcard = await okRpc(server, "ProfileService/SearchProfiles", { identifierPrefix: "%" });
    expect(wildcard.profiles ?? []).toEqual([]);

    // Bob's identify with Ada's laptop: Bob gets his own profile, the laptop stays Ada's, and her history says why.
    const bob = await okRpc(server, "ProfileService/GetProfile", { identifier: { type: "user_id", value: "bob" } });
    const bobProfile = bob.profile as { id: string; identifiers: Array<{ value: string }> };
    expect(bobProfile.identifiers.map((i) => i.value)).toEqual(["bob"]);
    const merges = await okRpc(server, "ProfileService/ListProfileMerges", { profileId: bobProfile.id });
    expect(merges.merges).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: "left_out", identifier: expect.objectContaining({ type: "anonymous_id", value: "laptop-1" }) }),
        expect.objectContaining({ kind: "created" }),
      ]),
    );
    const adaMerges = await okRpc(server, "ProfileService/ListProfileMerges", { profileId: profile.id });
    expect((adaMerges.merges as Array<{ kind: string }>).map((m) => m.kind)).toContain("merged");

    expect((await callRpc(server, "ProfileService/GetProfile", { identifier: { type: "user_id", value: "nobody" } })).code).toBe(
      "not_found",
    );
    expect((await callRpc(server, "ProfileService/GetProfile", {})).code).toBe("invalid_argument");
    expect((await callRpc(server, "ProfileService/GetProfile", { identifier: { type: "user_id", value: "x".repeat(300) } })).code).toBe(
      "invalid_argument",
    );
    expect((await callRpc(server, "ProfileService/SearchProfiles", {})).code).toBe("invalid_argument");
  });
});
