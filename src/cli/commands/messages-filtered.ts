import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Command } from "commander";
import { DeliveryService, Fate, ListFatesResponseSchema, type ListFatesRequest } from "../../../gen/waypost/v1/delivery_pb.js";
import { listPages } from "./list-pages.js";
import type { Wire } from "../context.js";
import { UsageError } from "../errors.js";
import { fateNames, parseCount, parseTime, table, time } from "../format.js";
import { resolveDestinationRef } from "./named-refs.js";

/** --reason: which recorded fate (and reason) to list. */
const reasons: Record<string, Pick<ListFatesRequest, "fate" | "reason">> = {
  filtered: { fate: Fate.FILTERED, reason: "" },
  filter: { fate: Fate.FILTERED, reason: "filter" },
  consent: { fate: Fate.FILTERED, reason: "consent" },
  subscriptions: { fate: Fate.FILTERED, reason: "subscriptions" },
  transform: { fate: Fate.FILTERED, reason: "transform" },
  disabled: { fate: Fate.DISABLED, reason: "" },
  "integrations-off": { fate: Fate.INTEGRATIONS_OFF, reason: "" },
  any: { fate: Fate.UNSPECIFIED, reason: "" },
};

interface Flags {
  destination: string;
  reason: string;
  since?: string;
  until?: string;
  limit: string;
}

/** `messages filtered`: the calls a destination got no delivery for (ListFates). */
export function registerMessagesFiltered(messages: Command, wire: Wire): void {
  messages
    .command("filtered")
    .description(
      "the calls a destination got no delivery for (its filter, consent, subscriptions or transform held them back), newest first",
    )
    .requiredOption("--destination <id|name>", "the destination")
    .option(
      "--reason <reason>",
      `${Object.keys(reasons).join(", ")} (filtered: any of filter, consent, subscriptions, transform)`,
      "filtered",
    )
    .option("--since <time>", "recorded at or after: ISO 8601, or back from now: 30s, 15m, 2h, 7d")
    .option("--until <time>", "recorded before: ISO 8601, or back from now")
    .option("--limit <n>", "at most this many", "50")
    .action(
      wire(async (ctx, flags: Flags) => {
        const which = reasons[flags.reason];
        if (!which) throw new UsageError(`--reason: one of ${Object.keys(reasons).join(", ")}, not ${JSON.stringify(flags.reason)}`);
        const limit = parseCount(flags.limit, "--limit");
        const request = {
          destinationId: await resolveDestinationRef(ctx, flags.destination),
          ...which,
          since: flags.since === undefined ? undefined : timestampFromDate(parseTime(flags.since, "--since")),
          until: flags.until === undefined ? undefined : timestampFromDate(parseTime(flags.until, "--until")),
        };
        const client = ctx.admin(DeliveryService);
        const listed = await listPages(
          (pageToken, pageSize) => client.listFates({ ...request, pageSize, pageToken }, { signal: ctx.signal }),
          (page) => page.calls,
          limit,
        );
        const all = create(ListFatesResponseSchema, { calls: listed.items, nextPageToken: listed.nextPageToken });
        ctx.print(ListFatesResponseSchema, all, () =>
          table(
            ["RECORDED", "MESSAGE ID", "TYPE", "EVENT", "USER", "FATE", "SOURCE"],
            all.calls.map((c) => [
              time(c.recordTime),
              c.messageId,
              c.type,
              c.event || "-",
              c.userId || "-",
              fateNames[c.fate] + (c.reason ? ` (${c.reason})` : ""),
              c.sourceId,
            ]),
          ),
        );
      }),
    );
}
