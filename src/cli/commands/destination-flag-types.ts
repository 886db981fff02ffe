import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Command } from "commander";
import type { Destination, DestinationSchema } from "../../../gen/waypost/v1/destination_pb.js";

// The shapes the destination flags share: the list of every destination's
// flags (destination-flags.ts) and each kind's own (kinds/) both use them,
// so they live apart from either.

/** The options commander parsed for a destination's flags. */
export type DestinationFlags = Record<string, unknown>;

export type DestinationInit = MessageInitShape<typeof DestinationSchema>;

/**
 * One setting of a destination as command-line flags: how to declare them,
 * and how they change the destination (naming the update-mask path).
 * A new setting is one more entry in `destinationFlags`.
 */
export interface FlagMapping {
  declare(command: Command, mode: "create" | "update"): void;
  /** Writes the setting into `into` when its flags were given; returns the mask path it changed. */
  apply(flags: DestinationFlags, into: DestinationInit, current: Destination | undefined): string | undefined;
  /** On update: whether `apply` needs the destination as it is (to keep what these flags leave unchanged). */
  needsCurrent?(flags: DestinationFlags): boolean;
}

/** What the CLI knows of one kind: its settings as flags, and how `list` and `get` show them. */
export interface KindFlags {
  flags: FlagMapping[];
  /** The usage error when `create --kind NAME` lacks a flag the kind needs; undefined when it has them. */
  missing(flags: DestinationFlags): string | undefined;
  /** Where its calls go, in one line (`destinations list`). */
  target(d: Destination): string;
  /** Its settings as `destinations get` shows them. */
  details(d: Destination): Array<readonly [string, string]>;
}
