import { collect } from "../format.js";
import type { DestinationFlags, DestinationInit, FlagMapping } from "./destination-flag-types.js";

type ListField = "dropFields" | "consentCategories" | "signingSecrets";

/**
 * A repeatable flag that replaces one list of a destination: on create, its
 * values; on update, the new list ("" alone empties it).
 */
export function listFlag(options: {
  /** As commander declares it: "--drop-field <path>". */
  flag: string;
  /** commander's name for its values: "dropField". */
  option: string;
  help: { create: string; update: string };
  field: ListField;
  /** The update-mask path it changes. */
  path: string;
}): FlagMapping {
  return {
    declare: (c, mode) => c.option(options.flag, options.help[mode], collect),
    apply(flags: DestinationFlags, into: DestinationInit) {
      const values = flags[options.option] as string[] | undefined;
      if (values === undefined) return undefined;
      into[options.field] = values.filter((value) => value !== "");
      return options.path;
    },
  };
}
