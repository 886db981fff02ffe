import { collect } from "../../format.js";
import type { DestinationFlags, DestinationInit, FlagMapping } from "../destination-flag-types.js";

/** The kinds whose settings are one flat message, a flag a field. */
type SettingsMessage = "postgres" | "amqp" | "nats";

/** One flag of a kind's settings: the field of its message it sets. */
export interface SettingFlag<M extends SettingsMessage> {
  key: keyof NonNullable<DestinationInit[M]> & string;
  /** As commander declares it: "--amqp-url <url>". */
  flag: string;
  help: string | { create: string; update: string };
  /** Repeatable: its values make a list. */
  repeat?: boolean;
  /** Its value from the text given (default: the text); throws a UsageError for text it cannot take. */
  parse?(text: string): unknown;
}

/** commander's name for a flag's value: "--amqp-url <url>" is amqpUrl. */
const optionOf = (flag: string) =>
  flag
    .split(" ")[0]!
    .replace(/^--/, "")
    .replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * A kind's settings message as flags, one a field. The message is sent
 * whole: what no flag gives is what is stored (`keep: "stored"`, read
 * first: as Get shows it, masked secrets and all, which the server takes
 * back as "keep it"), or left empty where the server itself keeps the
 * stored value for an empty one (`keep: "server"`).
 */
export function settingsFlags<M extends SettingsMessage>(
  message: M,
  settings: ReadonlyArray<SettingFlag<M>>,
  keep: "stored" | "server",
): FlagMapping {
  const given = (flags: DestinationFlags) => settings.some((s) => flags[optionOf(s.flag)] !== undefined);
  return {
    declare(c, mode) {
      for (const s of settings) {
        const help = typeof s.help === "string" ? s.help : s.help[mode];
        if (s.repeat) c.option(s.flag, help, collect);
        else c.option(s.flag, help);
      }
    },
    apply(flags, into, current) {
      if (!given(flags)) return undefined;
      const stored = keep === "stored" ? (current?.[message] as Record<string, unknown> | undefined) : undefined;
      const fields = settings.map((s) => {
        const typed = flags[optionOf(s.flag)];
        return [s.key, typed === undefined ? stored?.[s.key] : s.parse ? s.parse(String(typed)) : typed];
      });
      into[message] = Object.fromEntries(fields) as DestinationInit[M];
      return message;
    },
    ...(keep === "stored" ? { needsCurrent: given } : {}),
  };
}
