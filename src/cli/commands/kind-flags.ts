import type { Destination } from "../../../gen/waypost/v1/destination_pb.js";
import type { KindName } from "../../delivery/kinds/descriptors.js";
import { UsageError } from "../errors.js";
import { collect } from "../format.js";
import type { DestinationFlags, FlagMapping } from "./destination-flags.js";

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
      // update) sets the headers of the current webhooks.
      declare: (c, mode) => {
        const url = "a webhook URL (repeat for up to 5)";
        if (mode === "create") c.option("--url <url...>", `${url}; required for a webhook destination`, collect);
        else c.option("--url <url...>", `${url}; replaces the webhooks`, collect);
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
  details: () => [],
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

/** Each kind's flags, by kind name: a kind without an entry does not compile. */
export const kindFlags: Record<KindName, KindFlags> = {
  webhook: webhookFlags,
  postgres: postgresFlags,
};
