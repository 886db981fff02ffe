import { describe, expect, it } from "vitest";
import type { CallFacts } from "../../src/identity/call-identifiers.js";
import { profilesToShape } from "../../src/identity/graph-page.js";
import { type GraphState, identifierKey, type KnownProfile, planMerges, type ResolvedCall } from "../../src/identity/merge-plan.js";
import { parseIdentity } from "../../src/identity-config.js";

// A resolver page reads the age and limited identifiers of only the stored
// profiles its plan may judge (profilesToShape). Each page below is planned
// twice, once with every stored profile's shape and once with only those
// chosen: the profiles, merges and history must be the same, and a page of
// known people's calls reads none.

const { rules } = parseIdentity({});
const limitedTypes = new Set(rules.filter((rule) => rule.limit > 0).map((rule) => rule.type));
const day = (n: number) => new Date(Date.UTC(2026, 0, n));

/** Stored: A (u-a, a-1, oldest), B (b-1, anonymous only), C (u-c, c-1). */
const stored: Array<{ id: string; createdAt: Date; ids: Array<[string, string]> }> = [
  {
    id: "A",
    createdAt: day(1),
    ids: [
      ["user_id", "u-a"],
      ["anonymous_id", "a-1"],
    ],
  },
  { id: "B", createdAt: day(2), ids: [["anonymous_id", "b-1"]] },
  {
    id: "C",
    createdAt: day(3),
    ids: [
      ["user_id", "u-c"],
      ["anonymous_id", "c-1"],
    ],
  },
];

function graph(shaped: (id: string) => boolean): GraphState {
  const state: GraphState = { owners: new Map(), profiles: new Map() };
  for (const profile of stored) {
    const limited = new Map<string, Set<string>>();
    for (const [type, value] of profile.ids) {
      state.owners.set(identifierKey({ type, value }), profile.id);
      if (limitedTypes.has(type)) limited.set(type, (limited.get(type) ?? new Set()).add(value));
    }
    const known: KnownProfile = shaped(profile.id)
      ? { id: profile.id, createdAt: profile.createdAt, limited }
      : { id: profile.id, createdAt: new Date(0), limited: new Map(), unshaped: true };
    state.profiles.set(profile.id, known);
  }
  return state;
}

type Ids = Record<string, string>;
const facts = (ids: Ids): CallFacts => ({
  type: "track",
  identifiers: Object.entries(ids).map(([type, value]) => ({ type, value })),
  previousId: undefined,
  traits: undefined,
  counted: "x",
});
const calls = (page: Ids[]): ResolvedCall[] =>
  page.map((ids, n) => ({
    messagePk: String(n + 1),
    messageId: `m${n + 1}`,
    receivedAt: day(10 + n),
    identifiers: facts(ids).identifiers,
  }));

/** The plan's outcome without its random ids: who owns what, what merged into what, the history's kinds. */
function outcome(page: Ids[], state: GraphState) {
  const plan = planMerges(calls(page), state, rules);
  const named = (id: string) => (stored.some((profile) => profile.id === id) ? id : "new");
  return {
    owners: [...state.owners].map(([key, owner]) => `${key.replace("\u0000", ":")}=${named(owner)}`).sort(),
    merges: plan.merges.map((merge) => `${named(merge.from)}>${named(merge.into)}`),
    history: plan.history.map((entry) => `${entry.kind}:${named(entry.profileId)}`),
  };
}

function chosen(page: Ids[]): string[] {
  const { owners } = graph(() => true);
  return profilesToShape(page.map(facts), owners, limitedTypes).sort();
}

const pages: Array<{ name: string; page: Ids[]; shapes: string[] }> = [
  {
    name: "known people's calls",
    page: [{ user_id: "u-a" }, { anonymous_id: "b-1" }, { user_id: "u-c", anonymous_id: "c-1" }],
    shapes: [],
  },
  { name: "a stored visitor signs up (a limited identifier to add)", page: [{ anonymous_id: "b-1", user_id: "u-b" }], shapes: ["B"] },
  { name: "one call naming two stored profiles", page: [{ user_id: "u-a", anonymous_id: "b-1" }], shapes: ["A", "B"] },
  {
    name: "two calls joined by an identifier new to the graph",
    page: [
      { anonymous_id: "b-1", device: "d-1" },
      { user_id: "u-c", device: "d-1" },
    ],
    shapes: ["B", "C"],
  },
  {
    name: "a profile made in the page, then merged with a stored one",
    page: [{ anonymous_id: "new-1" }, { anonymous_id: "new-1", device: "d-2" }, { device: "d-2", user_id: "u-a" }],
    shapes: ["A"],
  },
  { name: "two userIds never merged (the limit needs both shapes)", page: [{ user_id: "u-a", anonymous_id: "c-1" }], shapes: ["A", "C"] },
];

describe("the profiles a page reads the shape of", () => {
  for (const { name, page, shapes } of pages) {
    it(name, () => {
      const picked = chosen(page);
      expect(picked).toEqual(shapes);
      expect(
        outcome(
          page,
          graph((id) => picked.includes(id)),
        ),
      ).toEqual(
        outcome(
          page,
          graph(() => true),
        ),
      );
    });
  }

  it("a plan that would judge a profile whose shape was not read fails rather than guess", () => {
    expect(() =>
      outcome(
        [{ user_id: "u-a", anonymous_id: "b-1" }],
        graph(() => false),
      ),
    ).toThrow(/shape was needed/);
    expect(() =>
      outcome(
        [{ anonymous_id: "b-1", user_id: "u-b" }],
        graph(() => false),
      ),
    ).toThrow(/shape was needed/);
  });
});
