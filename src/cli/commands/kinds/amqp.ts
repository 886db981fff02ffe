import { UsageError } from "../../errors.js";
import type { KindFlags } from "../destination-flag-types.js";
import { settingsFlags } from "./settings-flags.js";

const yesNo: Record<string, boolean> = { yes: true, true: true, no: false, false: false };

/** --mandatory: yes or no. */
function parseMandatory(text: string): boolean {
  const mandatory = yesNo[text.toLowerCase()];
  if (mandatory === undefined) throw new UsageError(`--mandatory: "${text}" is not yes or no`);
  return mandatory;
}

/** An AMQP broker: its URL (masked when shown), exchange, routing key template and whether unroutable messages fail. */
export const amqpFlags: KindFlags = {
  flags: [
    settingsFlags(
      "amqp",
      [
        {
          key: "url",
          flag: "--amqp-url <url>",
          help: { create: "the broker: amqp://user:password@host:5672/vhost (--kind amqp)", update: "a new broker URL" },
        },
        { key: "exchange", flag: "--exchange <name>", help: 'the exchange it publishes to (default "": the default exchange)' },
        {
          key: "routingKey",
          flag: "--routing-key <template>",
          help: 'the routing key: {type}, {event}, {sourceId}, {destinationId} (default "{type}")',
        },
        {
          key: "mandatory",
          flag: "--mandatory <yes|no>",
          help: "unroutable messages fail the attempt (default yes)",
          parse: parseMandatory,
        },
      ],
      "stored",
    ),
  ],
  missing: (flags) => (flags.amqpUrl === undefined ? "--kind amqp needs --amqp-url" : undefined),
  target: (d) => (d.amqp ? `${d.amqp.url} exchange "${d.amqp.exchange}" key ${d.amqp.routingKey}` : ""),
  details: (d) =>
    d.amqp
      ? [
          ["broker", d.amqp.url] as const,
          ["exchange", d.amqp.exchange === "" ? '"" (default)' : d.amqp.exchange] as const,
          ["routing key", d.amqp.routingKey] as const,
          ["mandatory", d.amqp.mandatory === false ? "no" : "yes"] as const,
        ]
      : [],
};
