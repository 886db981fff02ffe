import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Command } from "commander";
import type { Destination, DestinationSchema } from "../../../gen/waypost/v1/destination_pb.js";
import { UsageError } from "../errors.js";
import { collect } from "../format.js";

/** The options commander parsed for a destination's flags. */
export type DestinationFlags = Record<string, unknown>;

type DestinationInit = MessageInitShape<typeof DestinationSchema>;

/**
 * One setting of a destination as command-line flags: how to declare them,
 * and how they change the destination (naming the update-mask path).
 * A new setting is one more entry in `destinationFlags`.
 */
interface FlagMapping {
  declare(command: Command, mode: "create" | "update"): void;
  /** Writes the setting into `into` when its flags were given; returns the mask path it changed. */
  apply(flags: DestinationFlags, into: DestinationInit, current: Destination | undefined): string | undefined;
}

function parseHeader(text: string): [string, string] {
  const colon = text.indexOf(":");
  const name = colon > 0 ? text.slice(0, colon).trim() : "";
  if (!name) throw new UsageError(`--header: "${text}" is not NAME:VALUE`);
  return [name, text.slice(colon + 1).trim()];
}

export const destinationFlags: FlagMapping[] = [
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
    declare: (c) => c.option("--source <id...>", "a source whose calls it receives (repeat for several)", collectAll),
    apply(flags, into) {
      if (flags.source === undefined) return undefined;
      into.sourceIds = flags.source as string[];
      return "source_ids";
    },
  },
  {
    // --url and --header together make the webhooks; --header alone (on
    // update) sets the headers of the current webhooks.
    declare: (c, mode) => {
      const url = "a webhook URL (repeat for up to 5)";
      if (mode === "create") c.requiredOption("--url <url...>", url, collectAll);
      else c.option("--url <url...>", `${url}; replaces the webhooks`, collectAll);
      c.option("--header <name:value>", "a static header sent to every URL (repeat for several)", collect);
    },
    apply(flags, into, current) {
      const urls = flags.url as string[] | undefined;
      const headerFlags = flags.header as string[] | undefined;
      if (urls === undefined && headerFlags === undefined) return undefined;
      const headers = Object.fromEntries((headerFlags ?? []).map(parseHeader));
      const targets = urls ?? current?.webhooks.map((w) => w.url) ?? [];
      into.webhooks = targets.map((url) => ({ url, headers }));
      return "webhooks";
    },
  },
  {
    declare: (c, mode) =>
      c.option(
        "--shared-secret <secret>",
        mode === "create" ? "sign every request (X-Signature)" : 'a new signing secret; "" removes it',
      ),
    apply(flags, into) {
      if (flags.sharedSecret === undefined) return undefined;
      into.sharedSecret = flags.sharedSecret as string;
      return "shared_secret";
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
];

function collectAll(value: string, previous: string[] | undefined): string[] {
  return collect(value, previous);
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
