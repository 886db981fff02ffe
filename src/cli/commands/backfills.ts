import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Command } from "commander";
import {
  BackfillSchema,
  CancelBackfillResponseSchema,
  DestinationService,
  GetBackfillResponseSchema,
  ListBackfillsResponseSchema,
  type Backfill,
} from "../../../gen/waypost/v1/destination_pb.js";
import type { CliContext, Wire } from "../context.js";
import { fields, parseCount, parseTime, table, time } from "../format.js";
import { resolveDestinationRef } from "./named-refs.js";
import { followJob, jobStateNames, type JobSnapshot } from "./job-progress.js";

/** A backfill's counts in words. */
function summary(b: Backfill): string {
  if (b.fromArchive)
    return `created ${b.created}, filtered ${b.filtered} of ${b.archiveCallsRead} calls read from archive ${b.fromArchive}`;
  return `created ${b.created}, filtered ${b.filtered} of ${b.candidates} candidates`;
}

function snapshot(b: Backfill): JobSnapshot {
  // A replay counts no candidates up front: its total is what it has read so far.
  const total = b.fromArchive ? b.archiveCallsRead : b.candidates;
  return { state: b.state, done: b.created + b.filtered, total, summary: summary(b), error: b.error };
}

function describe(b: Backfill): string {
  return fields([
    ["backfill", b.id],
    ["destination", b.destinationId],
    ["state", jobStateNames[b.state] + (b.error ? ` (${b.error})` : "")],
    ...(b.fromArchive
      ? ([
          ["from archive", b.fromArchive],
          ["read", String(b.archiveCallsRead)],
        ] as Array<[string, string]>)
      : ([["candidates", String(b.candidates)]] as Array<[string, string]>)),
    ["created", String(b.created)],
    ["filtered", String(b.filtered)],
    ["range", `${time(b.since)} to ${time(b.until)}`],
    ["started", time(b.createTime)],
    ["ended", b.finishTime ? time(b.finishTime) : "-"],
  ]);
}

/** Follows a backfill to its end (a progress bar), then prints it. */
async function follow(ctx: CliContext, first: Backfill): Promise<void> {
  const client = ctx.admin(DestinationService);
  const ended = await followJob(ctx, {
    label: `backfill ${first.id}`,
    later: `waypost backfills get ${first.id} --wait`,
    first,
    read: async () => (await client.getBackfill({ id: first.id }, { signal: ctx.signal })).backfill!,
    view: snapshot,
  });
  ctx.print(BackfillSchema, ended, () => describe(ended));
}

/** `destinations backfill ID --since 7d`: starts a backfill and follows it (or not, with --detach). */
export function registerBackfillCommand(destinations: Command, wire: Wire): void {
  destinations
    .command("backfill")
    .description("create deliveries for retained calls received in a range that the destination has none for and that pass its rules")
    .argument("<id>", "destination id or name")
    .requiredOption("--since <time>", "received at or after: ISO 8601, or back from now: 30s, 15m, 2h, 7d")
    .option("--until <time>", "received before (default: now)")
    .option("--from-archive <id>", "replay the range from this lake destination's archive (past retention) instead of the retained calls")
    .option("--detach", "return at once, printing the backfill (it goes on in the server)")
    .action(
      wire(async (ctx, ref: string, flags: { since: string; until?: string; fromArchive?: string; detach?: boolean }) => {
        const since = parseTime(flags.since, "--since");
        const until = flags.until ? parseTime(flags.until, "--until") : undefined;
        const destinationId = await resolveDestinationRef(ctx, ref, "<id>");
        const fromArchive = flags.fromArchive ? await resolveDestinationRef(ctx, flags.fromArchive, "--from-archive") : undefined;
        const { backfill, alreadyRunning } = await ctx.admin(DestinationService).backfillDestination({
          destinationId,
          since: timestampFromDate(since),
          ...(until ? { until: timestampFromDate(until) } : {}),
          ...(fromArchive ? { fromArchive } : {}),
        });
        if (flags.detach) {
          ctx.print(
            BackfillSchema,
            backfill!,
            () =>
              `${alreadyRunning ? "already running, covering this range: " : ""}${describe(backfill!)}\n(follow it with: waypost backfills get ${backfill!.id} --wait)`,
          );
          return;
        }
        await follow(ctx, backfill!);
      }),
    );
}

/** `backfills list|get|cancel`: backfill jobs. */
export function registerBackfills(program: Command, wire: Wire): void {
  const backfills = program.command("backfills").description("backfill jobs: their progress, and cancelling one");
  backfills
    .command("list")
    .description("a destination's backfills, newest first")
    .requiredOption("--destination <id>", "destination id or name")
    .option("--limit <n>", "how many (default 20, at most 100)")
    .action(
      wire(async (ctx, flags: { destination: string; limit?: string }) => {
        const destinationId = await resolveDestinationRef(ctx, flags.destination);
        const response = await ctx.admin(DestinationService).listBackfills({
          destinationId,
          pageSize: flags.limit === undefined ? 0 : parseCount(flags.limit, "--limit"),
        });
        ctx.print(ListBackfillsResponseSchema, response, () =>
          table(
            ["ID", "STATE", "CANDIDATES", "CREATED", "FILTERED", "SINCE", "UNTIL", "STARTED"],
            response.backfills.map((b) => [
              b.id,
              jobStateNames[b.state],
              String(b.candidates),
              String(b.created),
              String(b.filtered),
              time(b.since),
              time(b.until),
              time(b.createTime),
            ]),
          ),
        );
      }),
    );
  backfills
    .command("get")
    .description("a backfill's state and counts")
    .argument("<id>", "backfill id")
    .option("--wait", "follow it until it ends, with a progress bar")
    .action(
      wire(async (ctx, id: string, flags: { wait?: boolean }) => {
        const response = await ctx.admin(DestinationService).getBackfill({ id });
        if (flags.wait) return follow(ctx, response.backfill!);
        ctx.print(GetBackfillResponseSchema, response, () => describe(response.backfill!));
      }),
    );
  backfills
    .command("cancel")
    .description("stop a running backfill after the page being written (what it created stays)")
    .argument("<id>", "backfill id")
    .action(
      wire(async (ctx, id: string) => {
        const response = await ctx.admin(DestinationService).cancelBackfill({ id });
        ctx.print(CancelBackfillResponseSchema, response, () => describe(response.backfill!));
      }),
    );
}
