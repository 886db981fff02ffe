import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { Profile, ProfileEvent, ProfileIdentifier, ProfileMerge, ProfileTrait } from "../../../gen/waypost/v1/profile_pb.js";
import { UsageError } from "../errors.js";
import { fields, table, time } from "../format.js";

// How `waypost profiles` takes a person on the line and shows profiles,
// their timelines and histories.

/** The flags that name one person: a profile's id, or one of their identifiers. */
export interface SelectorFlags {
  id?: string;
  identifier?: string;
  user?: string;
  anonymous?: string;
}

/** What the flags name: a profile id, or an identifier (type and value). */
export type Selector = { profileId: string } | { identifier: { type: string; value: string } };

const selectorFlags = "--id ID, --identifier TYPE:VALUE, --user U or --anonymous A";

/** Exactly one of --id, --identifier, --user, --anonymous. */
export function parseSelector(flags: SelectorFlags): Selector {
  const given = (["id", "identifier", "user", "anonymous"] as const).filter((key) => flags[key] !== undefined);
  if (given.length === 0) throw new UsageError(`name the profile: ${selectorFlags}`);
  if (given.length > 1) throw new UsageError(`give one of ${selectorFlags}, not ${given.map((key) => `--${key}`).join(" and ")}`);
  if (flags.id !== undefined) return { profileId: flags.id };
  if (flags.user !== undefined) return { identifier: { type: "user_id", value: flags.user } };
  if (flags.anonymous !== undefined) return { identifier: { type: "anonymous_id", value: flags.anonymous } };
  const text = flags.identifier!;
  const colon = text.indexOf(":");
  if (colon <= 0 || colon === text.length - 1) {
    throw new UsageError(`--identifier: "${text}" is not TYPE:VALUE (like user_id:ada or email:ada@example.com)`);
  }
  return { identifier: { type: text.slice(0, colon), value: text.slice(colon + 1) } };
}

/** --trait KEY=VALUE: the key, and the value as the server takes it (JSON text, or a bare word as a string). */
export function parseTrait(text: string): { traitKey: string; traitValue: string } {
  const equals = text.indexOf("=");
  if (equals <= 0) throw new UsageError(`--trait: "${text}" is not KEY=VALUE (like plan=pro or seats=3)`);
  return { traitKey: text.slice(0, equals), traitValue: text.slice(equals + 1) };
}

/** The longest a trait's value is shown. */
const maxValue = 60;

export function traitValueText(trait: ProfileTrait): string {
  const text = trait.value ? JSON.stringify(toJson(ValueSchema, trait.value)) : "null";
  return text.length > maxValue ? `${text.slice(0, maxValue - 1)}…` : text;
}

export const identifierText = (identifier: ProfileIdentifier | undefined): string =>
  identifier ? `${identifier.type}:${identifier.value}` : "-";

/** A profile as `profiles get` shows it: its fields, then its identifiers, traits and event counts as tables. */
export function describeProfile(profile: Profile): string {
  const head = fields([
    ["id", profile.id],
    ["merged ids", profile.mergedIds.join(", ") || "-"],
    ["calls", String(profile.calls)],
    ["first seen", time(profile.firstSeenTime)],
    ["last seen", time(profile.lastSeenTime)],
  ]);
  const identifiers = table(
    ["TYPE", "VALUE", "FIRST SEEN"],
    profile.identifiers.map((identifier) => [identifier.type, identifier.value, time(identifier.firstSeenTime)]),
  );
  const traitRows = Object.entries(profile.traits)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, trait]) => [key, traitValueText(trait), time(trait.setTime), trait.messageId || "-"]);
  const traits = traitRows.length > 0 ? table(["TRAIT", "VALUE", "SET", "MESSAGE ID"], traitRows) : "(no traits)\n";
  const countRows = Object.entries(profile.eventCounts)
    .sort(([a, x], [b, y]) => (x === y ? a.localeCompare(b) : x > y ? -1 : 1))
    .map(([name, count]) => [name, String(count)]);
  const counts = countRows.length > 0 ? table(["EVENT", "CALLS"], countRows) : "(no calls)\n";
  return [head, identifiers, traits, counts].join("\n");
}

/** Profiles found by a search: id, identifiers, calls, last seen. */
export function profileRows(profiles: readonly Profile[]): string {
  return table(
    ["ID", "CALLS", "LAST SEEN", "IDENTIFIERS"],
    profiles.map((p) => [p.id, String(p.calls), time(p.lastSeenTime), p.identifiers.map(identifierText).join(", ") || "-"]),
  );
}

/** A profile's timeline, newest first. */
export function eventRows(events: readonly ProfileEvent[]): string {
  return table(
    ["TIME", "TYPE", "NAME", "SOURCE", "MESSAGE ID"],
    events.map((e) => [time(e.receiveTime), e.type, e.name || "-", e.sourceId, e.messageId]),
  );
}

/** What one entry of the history says beyond its kind. */
export function mergeDetail(merge: ProfileMerge): string {
  switch (merge.kind) {
    case "merged":
      return `${merge.mergedProfileId} merged into it`;
    case "left_out":
      return `${identifierText(merge.identifier)} left out: ${merge.reason || "no reason given"}`;
    default:
      return "-";
  }
}

/** A profile's history, newest first. */
export function mergeRows(merges: readonly ProfileMerge[]): string {
  return table(
    ["TIME", "KIND", "PROFILE", "MESSAGE ID", "DETAIL"],
    merges.map((m) => [time(m.time), m.kind, m.profileId, m.messageId || "-", mergeDetail(m)]),
  );
}
