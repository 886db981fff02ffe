import { describe, expect, it } from "vitest";
import { type GraphState, type Identifier, identifierKey, planMerges, type ResolvedCall } from "../../src/identity/merge-plan.js";
import { parseIdentity } from "../../src/identity-config.js";

// The worked examples of Segment Unify's identity resolution docs and
// PostHog's person merging docs, as cases: each run once as one page and
// once a call per page, which must give the same profiles.

type Ids = Record<string, string>;

const call = (n: number, ids: Ids): ResolvedCall => ({
  messagePk: String(n),
  messageId: `m${n}`,
  receivedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, n)),
  identifiers: Object.entries(ids).map(([type, value]): Identifier => ({ type, value })),
});

/** The profiles after `calls`, as sorted lists of "type:value", and the history. */
function resolve(calls: ResolvedCall[], rulesEnv: Record<string, string> = {}, perPage = false) {
  const { rules } = parseIdentity(rulesEnv);
  const state: GraphState = { owners: new Map(), profiles: new Map() };
  const history = [];
  const callProfiles = new Map<string, string>();
  for (const page of perPage ? calls.map((c) => [c]) : [calls]) {
    const plan = planMerges(page, state, rules);
    history.push(...plan.history);
    for (const [pk, id] of plan.callProfiles) callProfiles.set(pk, id);
  }
  const byProfile = new Map<string, string[]>();
  for (const [key, owner] of state.owners) {
    const [type, value] = key.split("\u0000");
    byProfile.set(owner, [...(byProfile.get(owner) ?? []), `${type}:${value}`]);
  }
  const profiles = [...byProfile.values()].map((ids) => ids.sort().join(" ")).sort();
  const ownerOf = (type: string, value: string) => state.owners.get(identifierKey({ type, value }));
  return { profiles, history, ownerOf, callProfiles, state };
}

/** Runs a case both ways and checks they agree. */
function both(calls: ResolvedCall[], rulesEnv: Record<string, string> = {}) {
  const whole = resolve(calls, rulesEnv, false);
  const paged = resolve(calls, rulesEnv, true);
  expect(paged.profiles).toEqual(whole.profiles);
  return whole;
}

describe("identity resolution, the documented examples", () => {
  it("an anonymous visitor who signs up is one person (Segment: anonymous → identified)", () => {
    const result = both([call(1, { anonymous_id: "a1" }), call(2, { anonymous_id: "a1" }), call(3, { user_id: "u1", anonymous_id: "a1" })]);
    expect(result.profiles).toEqual(["anonymous_id:a1 user_id:u1"]);
  });

  it("one user on two devices is one person (Segment: two devices, one user)", () => {
    const result = both([
      call(1, { anonymous_id: "phone" }),
      call(2, { anonymous_id: "laptop" }),
      call(3, { user_id: "u1", anonymous_id: "phone" }),
      call(4, { user_id: "u1", anonymous_id: "laptop" }),
    ]);
    expect(result.profiles).toEqual(["anonymous_id:laptop anonymous_id:phone user_id:u1"]);
    expect(result.history.filter((entry) => entry.kind === "merged")).toHaveLength(1);
  });

  it("two different userIds are never merged, even through a shared device (PostHog: no merge of two identified persons)", () => {
    const result = both([
      call(1, { user_id: "u1", anonymous_id: "shared" }),
      call(2, { user_id: "u2", anonymous_id: "shared" }),
      call(3, { user_id: "u2" }),
    ]);
    expect(result.profiles).toEqual(["anonymous_id:shared user_id:u1", "user_id:u2"]);
    // The second call belongs to u2's profile; its device was left out of it, and the history says why.
    expect(result.callProfiles.get("2")).toBe(result.ownerOf("user_id", "u2"));
    const leftOut = result.history.find((entry) => entry.kind === "left_out");
    expect(leftOut).toMatchObject({ identifier: { type: "anonymous_id", value: "shared" }, messageId: "m2" });
    expect(leftOut && "reason" in leftOut ? leftOut.reason : "").toContain("user_id (limit 1)");
  });

  it("an alias-style identify of two anonymous profiles with one user merges them into the older", () => {
    const result = both([
      call(1, { anonymous_id: "a" }),
      call(2, { anonymous_id: "b" }),
      call(3, { anonymous_id: "a", user_id: "u" }),
      call(4, { anonymous_id: "b", user_id: "u" }),
    ]);
    expect(result.profiles).toEqual(["anonymous_id:a anonymous_id:b user_id:u"]);
    const merged = result.history.find((entry) => entry.kind === "merged");
    // The older profile (made by call 1) survives.
    expect(merged && "profileId" in merged ? merged.profileId : "").toBe(result.ownerOf("anonymous_id", "a"));
  });

  it("blocked values never link anyone (Segment's blocked values: null, 0, empty, and configured ones)", () => {
    const { rules } = parseIdentity({
      WAYPOST_IDENTITY_RULES: JSON.stringify([{ type: "email", path: "traits.email", blocked: ["test@example.com"] }]),
    });
    const email = rules.find((rule) => rule.type === "email")!;
    expect(email.blocked.has("test@example.com")).toBe(true);
    expect(email.blocked.has("null")).toBe(true);
    expect(rules.find((rule) => rule.type === "user_id")!.blocked.has("0")).toBe(true);
  });

  it("priority decides which identifier is left out when a limit would break (Segment: email limit 1, user_id first)", () => {
    const env = { WAYPOST_IDENTITY_RULES: JSON.stringify([{ type: "email", path: "traits.email", limit: 1, priority: 2 }]) };
    const result = both([call(1, { user_id: "u1", email: "old@example.com" }), call(2, { user_id: "u1", email: "new@example.com" })], env);
    expect(result.profiles).toEqual(["email:old@example.com user_id:u1"]);
    expect(result.ownerOf("email", "new@example.com")).toBeUndefined();
    expect(result.history.find((entry) => entry.kind === "left_out")).toMatchObject({
      identifier: { type: "email", value: "new@example.com" },
    });
  });

  it("with email above user_id, a second userId with a known email is the one left out", () => {
    const env = {
      WAYPOST_IDENTITY_RULES: JSON.stringify([
        { type: "email", path: "traits.email", limit: 1, priority: 1 },
        { type: "user_id", priority: 2 },
      ]),
    };
    const result = both([call(1, { user_id: "u1", email: "e@example.com" }), call(2, { user_id: "u2", email: "e@example.com" })], env);
    expect(result.profiles).toEqual(["email:e@example.com user_id:u1"]);
    expect(result.callProfiles.get("2")).toBe(result.ownerOf("email", "e@example.com"));
    expect(result.ownerOf("user_id", "u2")).toBeUndefined();
  });

  it("a chain of merges inside one page resolves every call and identifier to the last survivor", () => {
    const result = both([
      call(1, { anonymous_id: "a" }),
      call(2, { anonymous_id: "b" }),
      call(3, { anonymous_id: "c" }),
      call(4, { anonymous_id: "c", user_id: "u" }),
      call(5, { anonymous_id: "b", user_id: "u" }),
      call(6, { anonymous_id: "a", user_id: "u" }),
    ]);
    expect(result.profiles).toEqual(["anonymous_id:a anonymous_id:b anonymous_id:c user_id:u"]);
    const survivor = result.ownerOf("user_id", "u");
    expect(new Set(result.callProfiles.values())).toEqual(new Set([survivor]));
  });
});
