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
  selectDeletedIdentifiers,
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
  /** Whether a call received at `receivedAt` carries an identifier of a profile deleted after that. */
  deletedBefore(facts: CallFacts, receivedAt: Date): boolean;
}

export async function loadGraph(tx: Queryable, facts: readonly CallFacts[], rules: readonly IdentifierRule[]): Promise<PageGraph> {
  const keys = new Map<string, Identifier>();
  for (const fact of facts) {
    for (const identifier of fact.identifiers) keys.set(identifierKey(identifier), identifier);
    if (fact.previousId !== undefined) {
      for (const type of ["user_id", "anonymous_id"])
        keys.set(identifierKey({ type, value: fact.previousId }), { type, value: fact.previousId });
    }
  }
  const types = [...keys.values()].map((identifier) => identifier.type);
  const values = [...keys.values()].map((identifier) => identifier.value);
  const owners = await selectIdentifierOwners(tx, types, values);
  const shapes = await selectProfileShapes(
    tx,
    [...new Set(owners.map((row) => row.profile_id))],
    rules.filter((rule) => rule.limit > 0).map((rule) => rule.type),
  );
  const state: GraphState = { owners: new Map(owners.map((row) => [identifierKey(row), row.profile_id])), profiles: new Map() };
  for (const shape of shapes) {
    const limited = new Map<string, Set<string>>();
    for (const { type, value } of shape.limited) limited.set(type, (limited.get(type) ?? new Set()).add(value));
    state.profiles.set(shape.id, { id: shape.id, createdAt: shape.created_at, limited });
  }
  const tombstones = new Map((await selectDeletedIdentifiers(tx, types, values)).map((row) => [identifierKey(row), row.deleted_at]));
  return {
    state,
    deletedBefore(fact, receivedAt) {
      if (tombstones.size === 0) return false;
      return fact.identifiers.some((identifier) => {
        const deletedAt = tombstones.get(identifierKey(identifier));
        return deletedAt !== undefined && receivedAt <= deletedAt;
      });
    },
  };
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
