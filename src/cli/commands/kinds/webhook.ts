import { UsageError } from "../../errors.js";
import { collect } from "../../format.js";
import type { KindFlags } from "../destination-flag-types.js";
import { listFlag, valueFlag } from "../flag-mappings.js";
import { batchDetails, batchFlagsGiven, batchOf, declareBatchFlags } from "../webhook-batch-flags.js";

function parseHeader(text: string): [string, string] {
  const colon = text.indexOf(":");
  const name = colon > 0 ? text.slice(0, colon).trim() : "";
  if (!name) throw new UsageError(`--header: "${text}" is not NAME:VALUE`);
  return [name, text.slice(colon + 1).trim()];
}

/** Webhooks: the URLs with their headers and batches, and the secrets that sign their requests. */
export const webhookFlags: KindFlags = {
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
    valueFlag({
      flag: "--shared-secret <secret>",
      help: { create: "sign every request (X-Signature)", update: 'a new signing secret; "" removes it' },
      field: "sharedSecret",
      parse: (secret) => secret,
      path: "shared_secret",
    }),
    listFlag({
      flag: "--signing-secret <whsec>",
      help: {
        create: "a Standard Webhooks signing secret (whsec_...; repeat for several)",
        update: 'replaces the Standard Webhooks signing secrets (repeat for several; "" removes them all)',
      },
      field: "signingSecrets",
      path: "signing_secrets",
    }),
  ],
  missing: (flags) => (flags.url === undefined ? "a webhook destination needs --url (or give --kind for another kind)" : undefined),
  target: (d) => d.webhooks.map((w) => w.url).join(" "),
  details: batchDetails,
};
