import { UsageError } from "../../errors.js";
import { settingsKind } from "./settings-kind.js";

const yesNo: Record<string, boolean> = { yes: true, true: true, no: false, false: false };

/** --mandatory: yes or no. */
function parseMandatory(text: string): boolean {
  const mandatory = yesNo[text.toLowerCase()];
  if (mandatory === undefined) throw new UsageError(`--mandatory: "${text}" is not yes or no`);
  return mandatory;
}

/** An AMQP broker: its URL (masked when shown), exchange, routing key template and whether unroutable messages fail. */
export const amqpFlags = settingsKind({
  message: "amqp",
  keep: "stored",
  address: {
    key: "url",
    flag: "--amqp-url <url>",
    help: { create: "the broker: amqp://user:password@host:5672/vhost (--kind amqp)", update: "a new broker URL" },
  },
  others: [
    { key: "exchange", flag: "--exchange <name>", help: 'the exchange it publishes to (default "": the default exchange)' },
    {
      key: "routingKey",
      flag: "--routing-key <template>",
      help: 'the routing key: {type}, {event}, {sourceId}, {destinationId} (default "{type}")',
    },
    { key: "mandatory", flag: "--mandatory <yes|no>", help: "unroutable messages fail the attempt (default yes)", parse: parseMandatory },
  ],
  target: (amqp) => `${amqp.url} exchange "${amqp.exchange}" key ${amqp.routingKey}`,
  details: (amqp) => [
    ["broker", amqp.url],
    ["exchange", amqp.exchange === "" ? '"" (default)' : amqp.exchange],
    ["routing key", amqp.routingKey],
    ["mandatory", amqp.mandatory === false ? "no" : "yes"],
  ],
});
