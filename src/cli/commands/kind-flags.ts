import type { KindName } from "../../delivery/kinds/descriptors.js";
import { UsageError } from "../errors.js";
import { collect } from "../format.js";
import type { KindFlags } from "./destination-flag-types.js";
import { integrationFlags } from "./integration-flags.js";
import { batchDetails, batchFlagsGiven, batchOf, declareBatchFlags } from "./webhook-batch-flags.js";

function parseHeader(text: string): [string, string] {
  const colon = text.indexOf(":");
  const name = colon > 0 ? text.slice(0, colon).trim() : "";
  if (!name) throw new UsageError(`--header: "${text}" is not NAME:VALUE`);
  return [name, text.slice(colon + 1).trim()];
}

const webhookFlags: KindFlags = {
  flags: [
    {
      // --url and --header together make the webhooks; --header alone (on
      // update) sets the headers of the current webhooks. The --batch flags
      // set every URL's batch; alone (on update) they keep the rest as it is.
      declare: (c, mode) => {
        const url = "a webhook URL (repeat for up to 5)";
        if (mode === "create") c.option("--url <url...>", `${url}; required for a webhook destination`, collect);
        else c.option("--url <url...>", `${url}; replaces the webhooks`, collect);
        c.option("--header <name:value>", "a static header sent to every URL (repeat for several)", collect);
        declareBatchFlags(c, mode);
      },
      apply(flags, into, current) {
        const urls = flags.url as string[] | undefined;
        const headerFlags = flags.header as string[] | undefined;
        const batching = batchFlagsGiven(flags);
        if (urls === undefined && headerFlags === undefined && !batching) return undefined;
        const headers = headerFlags && Object.fromEntries(headerFlags.map(parseHeader));
        // Unchanged parts are sent as Get showed them (masked header values keep the stored ones).
        const targets = urls ? urls.map((url) => ({ url, headers: {} })) : (current?.webhooks ?? []);
        into.webhooks = targets.map((w) => {
          const kept = urls ? undefined : current?.webhooks.find((c) => c.url === w.url)?.batch;
          const batch = batchOf(batching ? flags : {}, kept);
          return { url: w.url, headers: headers ?? (urls ? {} : w.headers), ...(batch ? { batch } : {}) };
        });
        return "webhooks";
      },
      needsCurrent: (flags) => (flags.header !== undefined || batchFlagsGiven(flags)) && flags.url === undefined,
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
      declare: (c, mode) =>
        c.option(
          "--signing-secret <whsec>",
          mode === "create"
            ? "a Standard Webhooks signing secret (whsec_...; repeat for several)"
            : 'replaces the Standard Webhooks signing secrets (repeat for several; "" removes them all)',
          collect,
        ),
      apply(flags, into) {
        const secrets = flags.signingSecret as string[] | undefined;
        if (secrets === undefined) return undefined;
        into.signingSecrets = secrets.filter((s) => s !== "");
        return "signing_secrets";
      },
    },
  ],
  missing: (flags) => (flags.url === undefined ? "a webhook destination needs --url (or give --kind for another kind)" : undefined),
  target: (d) => d.webhooks.map((w) => w.url).join(" "),
  details: batchDetails,
};

const postgresFlags: KindFlags = {
  flags: [
    {
      declare: (c, mode) => {
        c.option(
          "--postgres-url <url>",
          mode === "create" ? "the warehouse: postgres://user:password@host:5432/database (--kind postgres)" : "a new warehouse URL",
        );
        c.option("--schema <name>", 'the warehouse schema its tables go in (default "waypost")');
      },
      apply(flags, into) {
        if (flags.postgresUrl === undefined && flags.schema === undefined) return undefined;
        // An empty URL on update keeps the stored one (the server never shows it).
        into.postgres = { url: (flags.postgresUrl as string | undefined) ?? "", schema: (flags.schema as string | undefined) ?? "" };
        return "postgres";
      },
    },
  ],
  missing: (flags) => (flags.postgresUrl === undefined ? "--kind postgres needs --postgres-url" : undefined),
  target: (d) => (d.postgres ? `${d.postgres.url} (schema ${d.postgres.schema})` : ""),
  details: (d) => (d.postgres ? [["warehouse", d.postgres.url] as const, ["schema", d.postgres.schema] as const] : []),
};

const yesNo: Record<string, boolean> = { yes: true, true: true, no: false, false: false };

const amqpFlags: KindFlags = {
  flags: [
    {
      declare: (c, mode) => {
        c.option(
          "--amqp-url <url>",
          mode === "create" ? "the broker: amqp://user:password@host:5672/vhost (--kind amqp)" : "a new broker URL",
        );
        c.option("--exchange <name>", 'the exchange it publishes to (default "": the default exchange)');
        c.option("--routing-key <template>", 'the routing key: {type}, {event}, {sourceId}, {destinationId} (default "{type}")');
        c.option("--mandatory <yes|no>", "unroutable messages fail the attempt (default yes)");
      },
      apply(flags, into, current) {
        const given = [flags.amqpUrl, flags.exchange, flags.routingKey, flags.mandatory];
        if (given.every((flag) => flag === undefined)) return undefined;
        const mandatory = flags.mandatory === undefined ? undefined : yesNo[String(flags.mandatory).toLowerCase()];
        if (flags.mandatory !== undefined && mandatory === undefined)
          throw new UsageError(`--mandatory: "${flags.mandatory}" is not yes or no`);
        // Unchanged settings are sent as Get showed them (the masked URL keeps the stored one).
        const stored = current?.amqp;
        into.amqp = {
          url: (flags.amqpUrl as string | undefined) ?? stored?.url ?? "",
          exchange: (flags.exchange as string | undefined) ?? stored?.exchange ?? "",
          routingKey: (flags.routingKey as string | undefined) ?? stored?.routingKey ?? "",
          mandatory: mandatory ?? stored?.mandatory,
        };
        return "amqp";
      },
      needsCurrent: (flags) => [flags.amqpUrl, flags.exchange, flags.routingKey, flags.mandatory].some((flag) => flag !== undefined),
    },
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

const natsFlags: KindFlags = {
  flags: [
    {
      declare: (c, mode) => {
        c.option(
          "--nats-server <url>",
          mode === "create" ? "a NATS server: nats://host:4222 (repeat for up to 5; --kind nats)" : "replaces the servers (repeat)",
          collect,
        );
        c.option("--subject <template>", 'the subject: {type}, {event}, {sourceId}, {destinationId} (default "waypost.{type}")');
        c.option("--nats-token <token>", "authenticate with a token");
        c.option("--nats-user <user>", "authenticate with a user and --nats-password");
        c.option("--nats-password <password>", "the user's password");
      },
      apply(flags, into, current) {
        const given = [flags.natsServer, flags.subject, flags.natsToken, flags.natsUser, flags.natsPassword];
        if (given.every((flag) => flag === undefined)) return undefined;
        // Unchanged settings are sent as Get showed them (masked credentials keep the stored ones).
        const stored = current?.nats;
        into.nats = {
          servers: (flags.natsServer as string[] | undefined) ?? stored?.servers ?? [],
          subject: (flags.subject as string | undefined) ?? stored?.subject ?? "",
          token: (flags.natsToken as string | undefined) ?? stored?.token ?? "",
          user: (flags.natsUser as string | undefined) ?? stored?.user ?? "",
          password: (flags.natsPassword as string | undefined) ?? stored?.password ?? "",
        };
        return "nats";
      },
      needsCurrent: (flags) =>
        [flags.natsServer, flags.subject, flags.natsToken, flags.natsUser, flags.natsPassword].some((flag) => flag !== undefined),
    },
  ],
  missing: (flags) => (flags.natsServer === undefined ? "--kind nats needs --nats-server" : undefined),
  target: (d) => (d.nats ? `${d.nats.servers.join(" ")} subject ${d.nats.subject}` : ""),
  details: (d) =>
    d.nats
      ? [
          ["servers", d.nats.servers.join(" ")] as const,
          ["subject", d.nats.subject] as const,
          ["credentials", d.nats.hasToken ? "token" : d.nats.user ? `user ${d.nats.user}` : "none"] as const,
        ]
      : [],
};

/** Each kind's flags, by kind name: a kind without an entry does not compile. */
export const kindFlags: Record<KindName, KindFlags> = {
  webhook: webhookFlags,
  postgres: postgresFlags,
  amqp: amqpFlags,
  nats: natsFlags,
  integration: integrationFlags,
};
