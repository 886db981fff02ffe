import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Command } from "commander";
import {
  DeliveryService,
  DeliveryView,
  GetDeliveryResponseSchema,
  ListDeliveriesResponseSchema,
  GetRetryJobResponseSchema,
  RetryDeliveryResponseSchema,
  RetryJobSchema,
  type RetryJob,
} from "../../../gen/waypost/v1/delivery_pb.js";
import { UsageError } from "../errors.js";
import { fields, parseCount, parseStatuses, parseTime, statusText } from "../format.js";
import type { CliContext, Wire } from "../context.js";
import { deliveryRows, describeDelivery } from "./delivery-text.js";
import { listPages } from "./list-pages.js";
import { createDestinationNames } from "./destination-names.js";
import { resolveDestinationRef } from "./named-refs.js";
import { followJob, jobStateNames, type JobSnapshot } from "./job-progress.js";
import { tailDeliveries } from "./tail.js";

interface FilterFlags {
  destination?: string;
  status?: string;
  messageId?: string;
  userId?: string;
  since?: string;
  until?: string;
}

const filterFlagNames = ["destination", "status", "messageId", "userId", "since", "until"] as const;

/** The ListDeliveries/RetryDeliveries filter fields from the flags (--destination: an id or a name). */
async function filterFromFlags(ctx: CliContext, flags: FilterFlags) {
  return {
    destinationId: flags.destination === undefined ? "" : await resolveDestinationRef(ctx, flags.destination),
    statuses: flags.status === undefined ? [] : parseStatuses(flags.status),
    messageId: flags.messageId ?? "",
    userId: flags.userId ?? "",
    since: flags.since === undefined ? undefined : timestampFromDate(parseTime(flags.since, "--since")),
    until: flags.until === undefined ? undefined : timestampFromDate(parseTime(flags.until, "--until")),
  };
}

function filterOptions(command: Command, destination: string): Command {
  return command
    .option("--destination <id|name>", destination)
    .option("--status <statuses>", "pending, retrying, delivered, failed, expired, cancelled; several: failed,expired")
    .option("--message-id <id>", "the call's messageId")
    .option("--user-id <id>", "the call's userId")
    .option("--since <time>", "created at or after: ISO 8601, or back from now: 30s, 15m, 2h, 7d")
    .option("--until <time>", "created before: ISO 8601, or back from now");
}

export function registerDeliveries(program: Command, wire: Wire): void {
  const deliveries = program.command("deliveries").description("find, inspect, retry and follow deliveries");

  filterOptions(deliveries.command("list").description("deliveries, newest first"), "only this destination's (default: every destination)")
    .option("--limit <n>", "at most this many", "50")
    .action(
      wire(async (ctx, flags: FilterFlags & { limit: string }) => {
        const limit = parseCount(flags.limit, "--limit");
        const filter = await filterFromFlags(ctx, flags);
        const client = ctx.admin(DeliveryService);
        const listed = await listPages(
          (pageToken, pageSize) =>
            client.listDeliveries({ ...filter, pageSize, pageToken, view: DeliveryView.BASIC }, { signal: ctx.signal }),
          (page) => page.deliveries,
          limit,
        );
        const all = create(ListDeliveriesResponseSchema, { deliveries: listed.items, nextPageToken: listed.nextPageToken });
        // Every destination's: each row names its destination.
        const names = new Map<string, string>();
        if (!flags.destination && !ctx.json) {
          const book = createDestinationNames(ctx);
          for (const d of all.deliveries) names.set(d.destinationId, await book.nameOf(d.destinationId));
        }
        ctx.print(ListDeliveriesResponseSchema, all, () => deliveryRows(all.deliveries, flags.destination ? undefined : names));
      }),
    );

  deliveries
    .command("get")
    .description("one delivery: the body and headers sent (secrets masked) and every attempt")
    .argument("<id>", "delivery id")
    .action(
      wire(async (ctx, id: string) => {
        const response = await ctx.admin(DeliveryService).getDelivery({ id });
        ctx.print(GetDeliveryResponseSchema, response, () => describeDelivery(response.delivery!));
      }),
    );

  filterOptions(
    deliveries
      .command("retry")
      .description("retry one delivery now, or (with --destination) every matching one, showing the progress")
      .argument("[id]", "delivery id"),
    "retry every matching delivery of this destination",
  )
    .action(
      wire(async (ctx, id: string | undefined, flags: FilterFlags & { detach?: boolean }) => {
        const client = ctx.admin(DeliveryService);
        if (id !== undefined) {
          // Only the filters: the common flags (--json, --url, --token) go with an id too.
          if (filterFlagNames.some((name) => flags[name] !== undefined)) {
            throw new UsageError("give a delivery id, or --destination with filters, not both");
          }
          const response = await client.retryDelivery({ id });
          ctx.print(
            RetryDeliveryResponseSchema,
            response,
            () => `delivery ${id} is ${statusText(response.delivery!.status)}: it will be sent again now`,
          );
          return;
        }
        if (!flags.destination) throw new UsageError("give a delivery id, or --destination ID|NAME to retry every matching delivery");
        const { destinationId, statuses, messageId, userId, since, until } = await filterFromFlags(ctx, flags);
        const { job } = await client.retryDeliveries({ destinationId, statuses, messageId, userId, since, until });
        if (flags.detach) {
          ctx.print(
            RetryJobSchema,
            job!,
            () => `${describeRetryJob(job!)}\n(follow it with: waypost deliveries retry-job ${job!.id} --wait)`,
          );
          return;
        }
        await followRetryJob(ctx, job!);
      }),
    )
    .option("--detach", "with --destination: return at once, printing the retry job (it goes on in the server)");

  deliveries
    .command("retry-job")
    .description("a bulk retry's state and counts")
    .argument("<id>", "retry job id (from deliveries retry --destination)")
    .option("--wait", "follow it until it ends, with a progress bar")
    .action(
      wire(async (ctx, id: string, flags: { wait?: boolean }) => {
        const response = await ctx.admin(DeliveryService).getRetryJob({ id });
        if (flags.wait) return followRetryJob(ctx, response.job!);
        ctx.print(GetRetryJobResponseSchema, response, () => describeRetryJob(response.job!));
      }),
    );

  filterOptions(
    deliveries.command("tail").description("follow deliveries as they finish, until Ctrl-C (with --json: one JSON object per line)"),
    "only this destination's (default: every destination)",
  )
    // From now on by default: what finished before is history, asked for with -n.
    .option("-n, --lines <n>", "first show this many that finished before (default: none, only what finishes from now on)", "0")
    .action(
      wire(async (ctx, flags: FilterFlags & { lines: string }) => {
        const lines = flags.lines === "0" ? 0 : parseCount(flags.lines, "--lines");
        await tailDeliveries(ctx, ctx.admin(DeliveryService), await filterFromFlags(ctx, flags), lines);
      }),
    );
}

function retrySnapshot(job: RetryJob): JobSnapshot {
  return {
    state: job.state,
    done: job.retried,
    total: job.matched,
    summary: `retried ${job.retried} of ${job.matched} matching`,
    error: job.error,
  };
}

function describeRetryJob(job: RetryJob): string {
  return fields([
    ["retry job", job.id],
    ["destination", job.destinationId],
    ["state", jobStateNames[job.state] + (job.error ? ` (${job.error})` : "")],
    ["matched", `${job.matched} (replayed with a fresh retry window)`],
    ["retried", String(job.retried)],
    ["not replayable", `${job.notReplayable} (their calls are past the retention period)`],
  ]);
}

/** Follows a bulk retry to its end (a progress bar), then prints it. */
async function followRetryJob(ctx: CliContext, first: RetryJob): Promise<void> {
  const client = ctx.admin(DeliveryService);
  const ended = await followJob(ctx, {
    label: `retry job ${first.id}`,
    later: `waypost deliveries retry-job ${first.id} --wait`,
    first,
    read: async () => (await client.getRetryJob({ id: first.id }, { signal: ctx.signal })).job!,
    view: retrySnapshot,
  });
  ctx.print(RetryJobSchema, ended, () => describeRetryJob(ended));
}
