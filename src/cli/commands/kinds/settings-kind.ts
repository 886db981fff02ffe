import { collect } from "../../format.js";
import type { Destination } from "../../../../gen/waypost/v1/destination_pb.js";
import type { DestinationFlags, DestinationInit, FlagMapping, KindFlags } from "../destination-flag-types.js";
import { type FlagHelp, helpIn, optionOf } from "../flag-mappings.js";

/** The kinds whose settings are one flat message, a flag a field. */
type SettingsMessage = "postgres" | "amqp" | "nats" | "lake";

/** One flag of a kind's settings: the field of its message it sets. */
export interface SettingFlag<M extends SettingsMessage> {
  key: keyof NonNullable<DestinationInit[M]> & string;
  /** As commander declares it: "--amqp-url <url>". */
  flag: string;
  help: FlagHelp;
  /** Repeatable: its values make a list. */
  repeat?: boolean;
  /** Its value from the text given (default: the text); throws a UsageError for text it cannot take. */
  parse?(text: string): unknown;
}

/**
 * A kind whose settings are one message, a flag a field. The message is
 * sent whole: what no flag gives is what is stored (`keep: "stored"`, read
 * first: as Get shows it, masked secrets and all, which the server takes
 * back as "keep it"), or left empty where the server itself keeps the
 * stored value for an empty one (`keep: "server"`).
 */
export function settingsKind<M extends SettingsMessage>(kind: {
  message: M;
  keep: "stored" | "server";
  /** Where its calls go: what `create --kind` cannot do without. */
  address: SettingFlag<M>;
  others: ReadonlyArray<SettingFlag<M>>;
  /** Where its calls go, in one line (`destinations list`). */
  target(settings: NonNullable<Destination[M]>): string;
  /** Its settings as `destinations get` shows them. */
  details(settings: NonNullable<Destination[M]>): Array<readonly [string, string]>;
}): KindFlags {
  const settings = [kind.address, ...kind.others];
  const given = (flags: DestinationFlags) => settings.some((s) => flags[optionOf(s.flag)] !== undefined);
  const mapping: FlagMapping = {
    declare(c, mode) {
      for (const s of settings) {
        const help = helpIn(s.help, mode);
        if (s.repeat) c.option(s.flag, help, collect);
        else c.option(s.flag, help);
      }
    },
    apply(flags, into, current) {
      if (!given(flags)) return undefined;
      const stored = kind.keep === "stored" ? (current?.[kind.message] as Record<string, unknown> | undefined) : undefined;
      const fields = settings.map((s) => {
        const typed = flags[optionOf(s.flag)];
        return [s.key, typed === undefined ? stored?.[s.key] : s.parse ? s.parse(String(typed)) : typed];
      });
      into[kind.message] = Object.fromEntries(fields) as DestinationInit[M];
      return kind.message;
    },
    ...(kind.keep === "stored" ? { needsCurrent: given } : {}),
  };
  const addressFlag = kind.address.flag.split(" ")[0];
  const of = (d: Destination) => d[kind.message] as NonNullable<Destination[M]> | undefined;
  return {
    flags: [mapping],
    missing: (flags) => (flags[optionOf(kind.address.flag)] === undefined ? `--kind ${kind.message} needs ${addressFlag}` : undefined),
    target: (d) => {
      const own = of(d);
      return own ? kind.target(own) : "";
    },
    details: (d) => {
      const own = of(d);
      return own ? kind.details(own) : [];
    },
  };
}
