import { describe, expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

// The resolver over real stored calls: sent through the tracking API,
// resolved behind ingest, by one process or by two at once.

const test = testWith({ server: { config: { role: "all" } } });

/** Every live profile as its sorted identifiers ("type:value"), sorted. */
async function partition(server: TestServer): Promise<string[]> {
  const { rows } = await server.pool.query<{ ids: string[] }>(
    `SELECT array_agg(i.type || ':' || i.value ORDER BY i.type, i.value) AS ids
       FROM profile_identifiers i JOIN profiles p ON p.id = i.profile_id AND p.merged_into IS NULL GROUP BY i.profile_id`,
  );
  return rows.map((row) => row.ids.join(" ")).sort();
}

async function caughtUp(...servers: TestServer[]) {
  for (const server of servers) await server.waypost.identity!.caughtUp();
}

describe("the identity resolver", () => {
  test("links an anonymous visitor to the user they become, with traits, counts and a timeline", async ({ server }) => {
    const source = await server.createSource();
    const tracking = server.tracking(source.writeKey);
    await tracking.page({ page: { anonymousId: "anon-1", name: "Home" } });
    await tracking.track({ track: { anonymousId: "anon-1", event: "Viewed Pricing" } });
    await tracking.identify({ identify: { userId: "u-1", anonymousId: "anon-1", traits: { plan: "free", name: "Ada" } } });
    await tracking.identify({ identify: { userId: "u-1", traits: { plan: "pro" } } });
    await tracking.track({ track: { userId: "u-1", event: "Upgraded" } });
    await caughtUp(server);
    expect(await partition(server)).toEqual(["anonymous_id:anon-1 user_id:u-1"]);
    const { rows } = await server.pool.query(
      "SELECT * FROM profiles p JOIN profile_figures f ON f.profile_id = p.id WHERE p.merged_into IS NULL",
    );
    expect(rows).toHaveLength(1);
    const profile = rows[0];
    expect(Number(profile.calls)).toBe(5);
    expect(profile.traits.plan.value).toBe("pro");
    expect(profile.traits.name.value).toBe("Ada");
    expect(profile.event_counts).toEqual({ "(page)": 1, "Viewed Pricing": 1, "(identify)": 2, Upgraded: 1 });
    const { rows: timeline } = await server.pool.query("SELECT count(*)::int AS n FROM profile_calls WHERE profile_id = $1", [profile.id]);
    expect(timeline[0].n).toBe(5);
  });

  test("an alias links the previous id to the user", async ({ server }) => {
    const source = await server.createSource();
    const tracking = server.tracking(source.writeKey);
    await tracking.track({ track: { anonymousId: "visitor-9", event: "Opened App" } });
    await tracking.alias({ alias: { userId: "u-9", previousId: "visitor-9" } });
    await caughtUp(server);
    expect((await partition(server)).filter((ids) => ids.includes("u-9"))).toEqual(["anonymous_id:visitor-9 user_id:u-9"]);
  });

  test("8 writers and two resolving processes at once give the profiles one writer gives", async ({ server }) => {
    const source = await server.createSource();
    const second = await startTestServer({ database: server.database });
    try {
      const people = Array.from({ length: 12 }, (_, p) => p);
      const devices = 4;
      // Every person's devices first seen alone, then identified, then aliased: interleaved across 8 writers.
      const calls = people.flatMap((p) =>
        Array.from({ length: devices }, (_, d) => [
          { track: { anonymousId: `p${p}-d${d}`, event: "Opened" } },
          { identify: { userId: `user-${p}`, anonymousId: `p${p}-d${d}` } },
          { alias: { userId: `user-${p}`, previousId: `p${p}-alias-${d}` } },
        ]).flat(),
      );
      const writers = Array.from({ length: 8 }, (_, w) => calls.filter((_, i) => i % 8 === w));
      const targets = [server, second];
      await Promise.all(
        writers.map(async (batch, w) => {
          const tracking = targets[w % 2]!.tracking(source.writeKey);
          for (const call of batch) {
            if ("track" in call) await tracking.track(call);
            else if ("identify" in call) await tracking.identify(call);
            else await tracking.alias(call);
          }
        }),
      );
      await Promise.all([caughtUp(server), caughtUp(second)]);
      const expected = people
        .map((p) =>
          [
            ...Array.from({ length: devices }, (_, d) => `anonymous_id:p${p}-alias-${d}`),
            ...Array.from({ length: devices }, (_, d) => `anonymous_id:p${p}-d${d}`),
            `user_id:user-${p}`,
          ]
            .sort()
            .join(" "),
        )
        .sort();
      expect((await partition(server)).filter((ids) => ids.includes("user_id:user-"))).toEqual(expected);
      const { rows } = await server.pool.query(
        "SELECT count(*)::int AS n FROM profile_calls pc JOIN messages m ON m.id = pc.message_pk WHERE m.source_id = $1",
        [source.id],
      );
      expect(rows[0].n).toBe(calls.length);
    } finally {
      await second.stop();
    }
  });
});
