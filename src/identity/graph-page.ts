import type { LoggedCall } from "../db/call-log/log-read.js";
import {
  growProfiles,
  type HistoryRow,
  insertHistory,
  insertIdentifiers,
  insertProfileCalls,
  insertProfiles,
  mergeProfiles,
  type ProfileGrowth,
  selectIdentifierOwners,
  selectProfileShapes,
} from "../db/queries/identity/identity-graph.js";
import type { Queryable } from "../db/pool.js";
import type { IdentifierRule } from "../identity-config.js";
import type { CallFacts } from "./call-identifiers.js";
import { type GraphState, type Identifier, identifierKey, type MergePlan } from "./merge-plan.js";

// A resolver page's reads of the graph before it plans, and its writes
// after: a handful of statements over arrays, whatever the page's size.

export interface PageGraph {
  state: GraphState;
  /** Whether a call of the page's source received at `receivedAt` carries an identifier of a profile deleted there after that. */
  deletedBefore(facts: CallFacts, receivedAt: Date): boolean;
}

export async function loadGraph(
  tx: Queryable,
  sourceId: string,
  facts: readonly CallFacts[],
  rules: readonly IdentifierRule[],
): Promise<PageGraph> {
  const keys = new Map<string, Identifier>();
  for (const fact of facts) for (const identifier of identifiersOf(fact)) keys.set(identifierKey(identifier), identifier);
  const types = [...keys.values()].map((identifier) => identifier.type);
  const values = [...keys.values()].map((identifier) => identifier.value);
  const { owners, tombstones } = await selectIdentifierOwners(tx, types, values, sourceId);
  const ownerOf = new Map(owners.map((row) => [identifierKey(row), row.profile_id]));
  const limitedTypes = rules.filter((rule) => rule.limit > 0).map((rule) => rule.type);
  const shapes = await selectProfileShapes(tx, profilesToShape(facts, ownerOf, new Set(limitedTypes)), limitedTypes);
  const state: GraphState = { owners: ownerOf, profiles: new Map() };
  // A profile the plan only adds calls to needs no shape: it gets one that says so (merge-plan.ts refuses to judge with it).
  for (const id of new Set(ownerOf.values())) state.profiles.set(id, { id, createdAt: new Date(0), limited: new Map(), unshaped: true });
  for (const shape of shapes) {
    const limited = new Map<string, Set<string>>();
    for (const { type, value } of shape.limited) limited.set(type, (limited.get(type) ?? new Set()).add(value));
    state.profiles.set(shape.id, { id: shape.id, createdAt: shape.created_at, limited });
  }
  const deleted = new Map(tombstones.map((row) => [identifierKey(row), row.deleted_at]));
  return {
    state,
    deletedBefore(fact, receivedAt) {
      if (deleted.size === 0) return false;
      return fact.identifiers.some((identifier) => {
        const deletedAt = deleted.get(identifierKey(identifier));
        return deletedAt !== undefined && receivedAt <= deletedAt;
      });
    },
  };
}

/** A call's identifiers as the page may read them: an alias's previous id as either type (which one, the plan decides). */
function identifiersOf(fact: CallFacts): Identifier[] {
  if (fact.previousId === undefined) return fact.identifiers;
  const previous = ["user_id", "anonymous_id"].map((type) => ({ type, value: fact.previousId! }));
  return [...fact.identifiers, ...previous];
}

/**
 * The stored profiles whose age and limited identifiers the plan may read.
 * Calls sharing identifiers form a group (the plan can only merge within
 * one); a group's stored profiles are read when the group could merge
 * (two of them), add an identifier of a limited type (a limit to check), or
 * make a profile (which a later call might merge with a stored one). The
 * rest, most calls of known people, only add calls to their one profile:
 * reading their shapes cost a probe per profile for nothing.
 */
export function profilesToShape(
  facts: readonly CallFacts[],
  ownerOf: ReadonlyMap<string, string>,
  limitedTypes: ReadonlySet<string>,
): string[] {
  const parent = new Map<string, string>();
  const root = (key: string): string => {
    let at = key;
    for (let up = parent.get(at); up !== undefined && up !== at; up = parent.get(at)) at = up;
    parent.set(key, at);
    return at;
  };
  const groups = new Map<string, { owners: Set<string>; risky: boolean }>();
  const identifiers = facts.map(identifiersOf);
  const calls = identifiers.map((list) => list.map(identifierKey));
  for (const keys of calls) {
    for (const key of keys) if (!parent.has(key)) parent.set(key, key);
    for (const key of keys.slice(1)) parent.set(root(key), root(keys[0]!));
  }
  const groupOf = (key: string) => {
    const at = root(key);
    let group = groups.get(at);
    if (!group) groups.set(at, (group = { owners: new Set(), risky: false }));
    return group;
  };
  calls.forEach((keys, index) => {
    if (keys.length === 0) return;
    const group = groupOf(keys[0]!);
    let owned = false;
    for (const [i, key] of keys.entries()) {
      const owner = ownerOf.get(key);
      if (owner !== undefined) {
        group.owners.add(owner);
        owned = true;
      } else if (limitedTypes.has(identifiers[index]![i]!.type)) group.risky = true;
    }
    if (!owned) group.risky = true;
  });
  const ids = new Set<string>();
  for (const group of groups.values()) {
    if (group.owners.size >= 2 || group.risky) for (const id of group.owners) ids.add(id);
  }
  return [...ids];
}

/** Each profile's figures and traits from the page's calls. */
function growthOf(plan: MergePlan, calls: readonly LoggedCall[], facts: ReadonlyMap<string, CallFacts>): ProfileGrowth[] {
  const growth = new Map<string, ProfileGrowth>();
  for (const call of calls) {
    const profileId = plan.callProfiles.get(call.messagePk);
    const fact = facts.get(call.messagePk);
    if (!profileId || !fact) continue;
    let entry = growth.get(profileId);
    if (!entry) {
      entry = { id: profileId, calls: 0, firstSeen: call.receivedAt, lastSeen: call.receivedAt, traits: {}, counts: {} };
      growth.set(profileId, entry);
    }
    entry.calls++;
    if (call.receivedAt < entry.firstSeen) entry.firstSeen = call.receivedAt;
    if (call.receivedAt > entry.lastSeen) entry.lastSeen = call.receivedAt;
    entry.counts[fact.counted] = (entry.counts[fact.counted] ?? 0) + 1;
    const at = call.receivedAt.toISOString();
    for (const [key, value] of Object.entries(fact.traits ?? {})) entry.traits[key] = { value, at, messageId: call.messageId };
  }
  return [...growth.values()];
}

function historyRows(plan: MergePlan): HistoryRow[] {
  return plan.history.map((entry) => ({
    profileId: entry.profileId,
    at: entry.at,
    kind: entry.kind,
    otherProfileId: entry.kind === "merged" ? entry.mergedId : null,
    identifierType: entry.kind === "left_out" ? entry.identifier.type : null,
    identifierValue: entry.kind === "left_out" ? entry.identifier.value : null,
    messageId: entry.messageId,
    reason: entry.kind === "left_out" ? entry.reason : null,
  }));
}

export async function writePage(
  tx: Queryable,
  plan: MergePlan,
  calls: readonly LoggedCall[],
  facts: ReadonlyMap<string, CallFacts>,
): Promise<void> {
  await insertProfiles(tx, plan.created);
  await mergeProfiles(tx, plan.merges);
  await insertIdentifiers(
    tx,
    plan.links.map((link) => ({ type: link.identifier.type, value: link.identifier.value, profileId: link.profileId, at: link.at })),
  );
  await growProfiles(tx, growthOf(plan, calls, facts));
  await insertProfileCalls(
    tx,
    [...plan.callProfiles].map(([messagePk, profileId]) => ({ profileId, messagePk })),
  );
  await insertHistory(tx, historyRows(plan));
}
