import { describe, expect } from "vitest";
import { purgeProfileCallsOfGoneMessages } from "../../src/db/queries/identity/profile-retention.js";
import { testWith } from "../helpers/fixtures.js";

const test = testWith({ server: { config: { role: "all" } } });

describe("profiles' timelines under retention", () => {
  test("the links of calls retention removed go; those of stored calls stay", async ({ server }) => {
    const source = await server.createSource();
    const tracking = server.tracking(source.writeKey);
    for (const n of [1, 2, 3]) await tracking.track({ track: { anonymousId: "fay", event: "Opened", messageId: `f${n}` } });
    await server.waypost.identity!.caughtUp();
    const { rows: before } = await server.pool.query("SELECT message_pk FROM profile_calls ORDER BY message_pk");
    expect(before).toHaveLength(3);
    // Retention takes the oldest call.
    await server.pool.query("DELETE FROM messages WHERE id = $1", [before[0].message_pk]);
    expect(await purgeProfileCallsOfGoneMessages(server.pool, 100)).toBe(1);
    const { rows: after } = await server.pool.query("SELECT message_pk FROM profile_calls ORDER BY message_pk");
    expect(after.map((row) => row.message_pk)).toEqual(before.slice(1).map((row) => row.message_pk));
  });
});
