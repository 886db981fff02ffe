import type { Command } from "commander";
import { type DestinationKind, Ordering, type Destination } from "../../../gen/waypost/v1/destination_pb.js";
import { kindDescriptors } from "../../delivery/kinds/descriptors.js";
import { UsageError } from "../errors.js";
import { readFileSync } from "node:fs";
import { collect, parseJsonObject } from "../format.js";
import type { DestinationFlags, DestinationInit, FlagMapping } from "./destination-flag-types.js";
import { kindFlags } from "./kinds/registry.js";
import { listFlag, valueFlag } from "./flag-mappings.js";

/** --rate-limit: a whole number of requests per second; 0 is no limit. */
export function parseRateLimit(text: string): number {
  // The server checks the range; beyond 32 bits it could not even be sent.
  if (!/^\d+$/.test(text.trim()) || Number(text) > 0xffff_ffff) {
    throw new UsageError(`--rate-limit: "${text}" is not a whole number of requests per second (0: no limit)`);
  }
  return Number(text.trim());
}

const orderingByName: Record<string, Ordering> = { none: Ordering.NONE, "per-user": Ordering.PER_USER };

/** --ordering: per-user or none. */
export function parseOrdering(text: string): Ordering {
  const ordering = orderingByName[text.trim().toLowerCase()];
  if (ordering === undefined) throw new UsageError(`--ordering: "${text}" is not one of per-user, none`);
  return ordering;
}

const kindNames = kindDescriptors.map((kind) => kind.name).join(", ");

/** --kind: one of the registered kinds' names. */
export function parseKind(text: string): DestinationKind {
  const kind = kindDescriptors.find((k) => k.name === text.trim().toLowerCase());
  if (kind === undefined) throw new UsageError(`--kind: "${text}" is not one of ${kindNames}`);
  return kind.proto;
}

/** Every destination's flags, then each kind's own (kinds/). */
export const destinationFlags: FlagMapping[] = [
  {
    declare: (c, mode) => {
      const kinds = kindDescriptors.map((kind, i) => `${kind.name}${i === 0 ? " (default)" : ""}: ${kind.summary}`).join("; ");
      if (mode === "create") c.option("--kind <kind>", kinds);
    },
    apply(flags, into) {
      if (flags.kind === undefined) return undefined;
      into.kind = parseKind(flags.kind as string);
      // The kind is chosen once, on create: no update path.
      return undefined;
    },
  },
  {
    declare: (c, mode) =>
      mode === "create" ? c.requiredOption("--name <name>", "the destination's name") : c.option("--name <name>", "a new name"),
    apply(flags, into) {
      if (flags.name === undefined) return undefined;
      into.name = flags.name as string;
      return "name";
    },
  },
  {
    declare: (c) => c.option("--source <id...>", "a source whose calls it receives (repeat for several)", collect),
    apply(flags, into) {
      if (flags.source === undefined) return undefined;
      into.sourceIds = flags.source as string[];
      return "source_ids";
    },
  },
  valueFlag({
    flag: "--rate-limit <n>",
    help: "at most N deliveries a second to this destination (0: no limit)",
    field: "maxRequestsPerSecond",
    parse: parseRateLimit,
    path: "max_requests_per_second",
  }),
  valueFlag({
    flag: "--ordering <order>",
    help: "per-user: one user's deliveries one at a time, in order; none: any order",
    field: "ordering",
    parse: parseOrdering,
    path: "ordering",
  }),
  valueFlag({
    flag: "--filter <json>",
    help: { create: "which calls it gets: a filter document (see docs/routing.md)", update: 'a new filter; "{}" removes it' },
    field: "filter",
    parse: (text) => parseJsonObject(text, "--filter") as DestinationInit["filter"],
    path: "filter",
  }),
  listFlag({
    flag: "--drop-field <path>",
    help: {
      create: "a dotted path removed from every body (repeat for several)",
      update: 'replaces the dropped fields (repeat; "" removes them all)',
    },
    field: "dropFields",
    path: "drop_fields",
  }),
  valueFlag({
    flag: "--transform-file <file>",
    help: { create: "JavaScript defining transform(event)", update: 'a new transform; "" removes it' },
    field: "transform",
    parse: (file) => (file === "" ? "" : readTransform(file)),
    path: "transform",
  }),
  listFlag({
    flag: "--consent-category <name>",
    help: {
      create:
        "a consent category every call's context.consent.categoryPreferences must grant (repeat for several; see docs/routing.md#consent)",
      update: 'replaces the consent categories (repeat; "" removes them all)',
    },
    field: "consentCategories",
    path: "consent_categories",
  }),
  {
    declare: (c, mode) => {
      c.option("--require-consent", "hold back calls that carry no consent preferences too");
      if (mode === "update") c.option("--no-require-consent", "route calls that carry no consent preferences");
    },
    apply(flags, into) {
      if (flags.requireConsent === undefined) return undefined;
      into.requireConsent = flags.requireConsent === true;
      return "require_consent";
    },
  },
  {
    declare: (c, mode) => {
      c.option("--add-profile-id", "add context.profileId (the person, from identity resolution) to every call it sends");
      if (mode === "update") c.option("--no-add-profile-id", "stop adding context.profileId");
    },
    apply(flags, into) {
      if (flags.addProfileId === undefined) return undefined;
      into.addProfileId = flags.addProfileId === true;
      return "add_profile_id";
    },
  },
  {
    declare: (c, mode) => {
      c.option("--disabled", mode === "create" ? "create it disabled (calls are not routed to it)" : "disable it");
      if (mode === "update") c.option("--enabled", "enable it");
    },
    apply(flags, into) {
      if (flags.disabled && flags.enabled) throw new UsageError("--enabled and --disabled contradict each other");
      if (flags.disabled) into.enabled = false;
      else if (flags.enabled) into.enabled = true;
      else return undefined;
      return "enabled";
    },
  },
  ...kindDescriptors.flatMap((kind) => kindFlags[kind.name].flags),
];

function readTransform(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new UsageError(`--transform-file: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

export function declareDestinationFlags(command: Command, mode: "create" | "update"): Command {
  for (const mapping of destinationFlags) mapping.declare(command, mode);
  return command;
}

/** The destination the flags describe, and the update-mask paths they change. */
export function destinationFromFlags(flags: DestinationFlags, current?: Destination): { destination: DestinationInit; paths: string[] } {
  const destination: DestinationInit = {};
  const paths: string[] = [];
  for (const mapping of destinationFlags) {
    const path = mapping.apply(flags, destination, current);
    if (path) paths.push(path);
  }
  return { destination, paths };
}

/** Whether an update with these flags reads the destination first (some flag keeps part of what is stored). */
export function flagsNeedCurrent(flags: DestinationFlags): boolean {
  return destinationFlags.some((mapping) => mapping.needsCurrent?.(flags) === true);
}
