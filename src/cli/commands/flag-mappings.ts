import { collect } from "../format.js";
import type { DestinationFlags, DestinationInit, FlagMapping } from "./destination-flag-types.js";

// The common shapes of a destination's flags: one value that sets one field,
// and a repeatable one that replaces one list.

/** commander's name for a flag's value: "--amqp-url <url>" is amqpUrl. */
export const optionOf = (flag: string) =>
  flag
    .split(" ")[0]!
    .replace(/^--/, "")
    .replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** A flag's help, or its help on create and on update. */
export type FlagHelp = string | { create: string; update: string };

export const helpIn = (help: FlagHelp, mode: "create" | "update") => (typeof help === "string" ? help : help[mode]);

/** A flag that sets one field of the destination to its value (`parse` throws a UsageError for text it cannot take). */
export function valueFlag<F extends keyof DestinationInit>(options: {
  /** As commander declares it: "--rate-limit <n>". */
  flag: string;
  help: FlagHelp;
  field: F;
  parse(text: string): DestinationInit[F];
  /** The update-mask path it changes. */
  path: string;
}): FlagMapping {
  return {
    declare: (c, mode) => c.option(options.flag, helpIn(options.help, mode)),
    apply(flags: DestinationFlags, into: DestinationInit) {
      const text = flags[optionOf(options.flag)] as string | undefined;
      if (text === undefined) return undefined;
      into[options.field] = options.parse(text);
      return options.path;
    },
  };
}

type ListField = "dropFields" | "consentCategories" | "signingSecrets";

/** A repeatable flag that replaces one list of the destination: its values ("" alone empties it). */
export function listFlag(options: { flag: string; help: FlagHelp; field: ListField; path: string }): FlagMapping {
  return {
    declare: (c, mode) => c.option(options.flag, helpIn(options.help, mode), collect),
    apply(flags: DestinationFlags, into: DestinationInit) {
      const values = flags[optionOf(options.flag)] as string[] | undefined;
      if (values === undefined) return undefined;
      into[options.field] = values.filter((value) => value !== "");
      return options.path;
    },
  };
}
