import { randomUUID } from "node:crypto";
import type { IdentifierRule } from "../identity-config.js";

// What a page of calls does to the identity graph, worked out in memory
// from what the graph holds for the page's identifiers: which profiles are
// made, which merge into which, which identifiers link where, and which are
// left out because a merge would break a rule. Pure, so Segment Unify's and
// PostHog's worked examples are tested here as cases (test/identity/).
//
// Segment's rule: the profiles matching any identifier of a call are merged
// with it, unless the merge would give a profile more identifiers of a type
// than the type's limit; then the call's identifier of the lowest priority
// is dropped, and the rest tried again.

export interface Identifier {
  type: string;
  value: string;
}

export interface ResolvedCall {
  messagePk: string;
  messageId: string;
  receivedAt: Date;
  /** The call's identifiers, blocked values already out, at most one per type. */
  identifiers: Identifier[];
}

/** A profile as the page starts: its id, its age, and its identifiers of the limited types. */
export interface KnownProfile {
  id: string;
  createdAt: Date;
  limited: Map<string, Set<string>>;
  /** Stored, and its age and limited identifiers not read: the page only adds calls to it (graph-page.ts). */
  unshaped?: true;
}

export interface GraphState {
  /** Identifier key (type + NUL + value) → the live profile holding it. */
  owners: Map<string, string>;
  profiles: Map<string, KnownProfile>;
}

export type HistoryEntry =
  | { kind: "created"; profileId: string; messageId: string; at: Date }
  | { kind: "merged"; profileId: string; mergedId: string; messageId: string; at: Date }
  | { kind: "left_out"; profileId: string; identifier: Identifier; reason: string; messageId: string; at: Date };

export interface MergePlan {
  created: KnownProfile[];
  /** In order: `from` merged into `into` (both as they were then; `into` may itself merge later in the page). */
  merges: Array<{ from: string; into: string }>;
  /** Identifiers new to the graph, and the profile each links to (resolved to the page's end). */
  links: Array<{ identifier: Identifier; profileId: string; at: Date }>;
  /** Each call's profile at the page's end. */
  callProfiles: Map<string, string>;
  history: HistoryEntry[];
}

export const identifierKey = (identifier: Identifier) => `${identifier.type}\u0000${identifier.value}`;

export function planMerges(calls: readonly ResolvedCall[], state: GraphState, rules: readonly IdentifierRule[]): MergePlan {
  const ruleOf = new Map(rules.map((rule) => [rule.type, rule]));
  const rank = (identifier: Identifier) => ruleOf.get(identifier.type)?.priority ?? Number.MAX_SAFE_INTEGER;
  const limited = rules.filter((rule) => rule.limit > 0);
  const mergedInto = new Map<string, string>();
  const find = (id: string): string => {
    let at = id;
    for (let next = mergedInto.get(at); next !== undefined; next = mergedInto.get(at)) at = next;
    return at;
  };
  const plan: MergePlan = { created: [], merges: [], links: [], callProfiles: new Map(), history: [] };
  const linkAt = new Map<string, { identifier: Identifier; profileId: string; at: Date }>();

  const breaksALimit = (profiles: readonly KnownProfile[], identifiers: readonly Identifier[]) =>
    limited.some((rule) => {
      const values = new Set<string>();
      for (const profile of profiles) for (const value of profile.limited.get(rule.type) ?? []) values.add(value);
      for (const identifier of identifiers) if (identifier.type === rule.type) values.add(identifier.value);
      return values.size > rule.limit;
    });

  for (const call of calls) {
    const kept = [...call.identifiers].sort((a, b) => rank(a) - rank(b));
    let matching: KnownProfile[] = [];
    const leftOut: Array<{ identifier: Identifier; reason: string }> = [];
    for (;;) {
      const ids = new Set(
        kept.flatMap((identifier) => {
          const owner = state.owners.get(identifierKey(identifier));
          return owner === undefined ? [] : [find(owner)];
        }),
      );
      matching = [...ids].map((id) => state.profiles.get(id)!);
      mustBeShaped(matching, kept, state, ruleOf);
      if (!breaksALimit(matching, kept)) break;
      const broken = limitBroken(limited, matching, kept);
      leftOut.push({ identifier: kept.pop()!, reason: `linking it would give one profile more ${broken} identifiers than allowed` });
    }
    if (kept.length === 0) continue;
    let survivor: KnownProfile;
    if (matching.length === 0) {
      survivor = { id: randomUUID(), createdAt: call.receivedAt, limited: new Map() };
      state.profiles.set(survivor.id, survivor);
      plan.created.push(survivor);
      plan.history.push({ kind: "created", profileId: survivor.id, messageId: call.messageId, at: call.receivedAt });
    } else {
      matching.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id));
      survivor = matching[0]!;
      for (const other of matching.slice(1)) {
        mergedInto.set(other.id, survivor.id);
        for (const [type, values] of other.limited) {
          const into = survivor.limited.get(type) ?? new Set<string>();
          for (const value of values) into.add(value);
          survivor.limited.set(type, into);
        }
        plan.merges.push({ from: other.id, into: survivor.id });
        plan.history.push({ kind: "merged", profileId: survivor.id, mergedId: other.id, messageId: call.messageId, at: call.receivedAt });
      }
    }
    for (const identifier of kept) {
      const key = identifierKey(identifier);
      if (state.owners.has(key)) continue;
      state.owners.set(key, survivor.id);
      const link = { identifier, profileId: survivor.id, at: call.receivedAt };
      linkAt.set(key, link);
      plan.links.push(link);
      if (ruleOf.get(identifier.type)?.limit) {
        const values = survivor.limited.get(identifier.type) ?? new Set<string>();
        values.add(identifier.value);
        survivor.limited.set(identifier.type, values);
      }
    }
    plan.callProfiles.set(call.messagePk, survivor.id);
    for (const { identifier, reason } of leftOut) {
      plan.history.push({ kind: "left_out", profileId: survivor.id, identifier, reason, messageId: call.messageId, at: call.receivedAt });
    }
  }
  // Resolved to the page's end: a profile made or linked early in the page may have merged later.
  for (const link of plan.links) link.profileId = find(link.profileId);
  for (const [pk, id] of plan.callProfiles) plan.callProfiles.set(pk, find(id));
  for (const [key, owner] of state.owners) state.owners.set(key, find(owner));
  return plan;
}

/**
 * A merge's survivor is the oldest profile, and a limit counts a profile's
 * identifiers: judging either with a profile whose shape was not read
 * would be wrong silently, so it fails the page loudly instead.
 */
function mustBeShaped(
  matching: readonly KnownProfile[],
  kept: readonly Identifier[],
  state: GraphState,
  ruleOf: ReadonlyMap<string, IdentifierRule>,
): void {
  if (!matching.some((profile) => profile.unshaped)) return;
  const addsLimited = kept.some((identifier) => ruleOf.get(identifier.type)?.limit && !state.owners.has(identifierKey(identifier)));
  if (matching.length > 1 || addsLimited) throw new Error("identity resolution: a profile's shape was needed and not read");
}

/** The type whose limit a set of profiles and identifiers breaks, for the history's words. */
function limitBroken(limited: readonly IdentifierRule[], profiles: readonly KnownProfile[], identifiers: readonly Identifier[]): string {
  for (const rule of limited) {
    const values = new Set<string>();
    for (const profile of profiles) for (const value of profile.limited.get(rule.type) ?? []) values.add(value);
    for (const identifier of identifiers) if (identifier.type === rule.type) values.add(identifier.value);
    if (values.size > rule.limit) return `${rule.type} (limit ${rule.limit})`;
  }
  return "";
}
