import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import type { Command } from "commander";
import { type HookRequest, HookRequestStatus, HookService } from "../../../gen/waypost/v1/hook_pb.js";
import { listPages } from "./list-pages.js";
import type { CliContext, Wire } from "../context.js";
import { UsageError } from "../errors.js";
import { collect, parseTime } from "../format.js";
import { pause } from "./job-progress.js";
import { resolveSourceRef } from "./named-refs.js";

interface ReprocessFlags {
  id?: string[];
  since?: string;
  until?: string;
  includeProcessed?: boolean;
  detach?: boolean;
}

/** What a request's run again made: its calls new, those it had made before, or a failure. */
interface Outcome {
  requests: number;
  newCalls: number;
  alreadyStored: number;
  failed: number;
}

const pollMs = 500;

/** A source's requests received at or after `since` (all without it) that `keep` selects, every page. */
async function listRequests(
  client: Client<typeof HookService>,
  ctx: CliContext,
  sourceId: string,
  since: Timestamp | undefined,
  keep: (r: HookRequest) => boolean,
): Promise<HookRequest[]> {
  const { items } = await listPages(
    (pageToken, pageSize) => client.listHookRequests({ sourceId, since, pageSize, pageToken }, { signal: ctx.signal }),
    (page) => page.requests,
  );
  return items.filter(keep);
}

/** The requests the reprocess will set to run again, as the server selects them (ids, or failed ones in a range). */
function selection(flags: ReprocessFlags, until: Date | undefined): (r: HookRequest) => boolean {
  const ids = new Set(flags.id ?? []);
  const rerunnable = (r: HookRequest) =>
    r.status === HookRequestStatus.FAILED ||
    ((ids.size > 0 || flags.includeProcessed === true) && r.status === HookRequestStatus.PROCESSED);
  if (ids.size > 0) return (r) => ids.has(r.id) && rerunnable(r);
  return (r) => rerunnable(r) && (until === undefined || (r.receiveTime !== undefined && timestampDate(r.receiveTime) < until));
}

/**
 * Waits until none of `before` is pending any more, then compares each
 * request's calls with those it had made before: a call at a messageId it
 * had already made is not stored twice. Undefined when Ctrl-C came first.
 */
async function awaitOutcome(
  client: Client<typeof HookService>,
  ctx: CliContext,
  sourceId: string,
  before: readonly HookRequest[],
): Promise<Outcome | undefined> {
  const earliest = before.reduce(
    (a, r) => (r.receiveTime && (!a || timestampDate(r.receiveTime) < a) ? timestampDate(r.receiveTime) : a),
    undefined as Date | undefined,
  );
  const since = earliest ? timestampFromDate(earliest) : undefined;
  const wanted = new Set(before.map((r) => r.id));
  for (;;) {
    if (!(await pause(pollMs, ctx.signal))) return undefined;
    const now = await listRequests(client, ctx, sourceId, since, (r) => wanted.has(r.id));
    if (now.some((r) => r.status === HookRequestStatus.PENDING)) continue;
    const had = new Map(before.map((r) => [r.id, new Set(r.messageIds)]));
    const outcome: Outcome = { requests: now.length, newCalls: 0, alreadyStored: 0, failed: 0 };
    for (const r of now) {
      if (r.status === HookRequestStatus.FAILED) outcome.failed++;
      for (const id of r.messageIds) {
        if (had.get(r.id)?.has(id)) outcome.alreadyStored++;
        else outcome.newCalls++;
      }
    }
    return outcome;
  }
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** `hooks reprocess SOURCE`: sets requests to run again, waits for them and says what they made. */
export function registerHookReprocess(hooks: Command, wire: Wire): void {
  hooks
    .command("reprocess")
    .description(
      "run requests through the source's transform again (after a fix), then say how many calls were new; a call already made is not made twice",
    )
    .argument("<source>", "source id or name")
    .option("--id <request-id>", "this request (repeat for several)", collect)
    .option("--since <time>", "without --id: the failed requests received at or after (default: every failed one)")
    .option("--until <time>", "without --id: received before")
    .option("--include-processed", "without --id: processed requests too, not only failed ones")
    .option("--detach", "return once they are set to run again, without waiting for them")
    .action(
      wire(async (ctx, ref: string, flags: ReprocessFlags) => {
        const ids = flags.id ?? [];
        if (ids.length > 0 && (flags.since !== undefined || flags.until !== undefined || flags.includeProcessed)) {
          throw new UsageError("--id: give either request ids or a time range (--since/--until/--include-processed), not both");
        }
        const sinceDate = flags.since === undefined ? undefined : parseTime(flags.since, "--since");
        const until = flags.until === undefined ? undefined : parseTime(flags.until, "--until");
        // Without ids the RPC takes a range: "every failed one" is since the epoch (retention bounds what is kept).
        const since = sinceDate ? timestampFromDate(sinceDate) : ids.length === 0 ? timestampFromDate(new Date(0)) : undefined;
        const sourceId = await resolveSourceRef(ctx, ref);
        const client = ctx.admin(HookService);
        const before = flags.detach
          ? []
          : await listRequests(client, ctx, sourceId, ids.length > 0 ? undefined : since, selection(flags, until));
        const response = await client.reprocessHookRequests({
          sourceId,
          requestIds: ids,
          since,
          until: until ? timestampFromDate(until) : undefined,
          includeProcessed: flags.includeProcessed === true,
        });
        const requeued = Number(response.requeued);
        const set = `${plural(requeued, "request")} set to run again`;
        if (flags.detach || requeued === 0) {
          ctx.printJson({ requeued: String(requeued) }, () => set);
          return;
        }
        const outcome = await awaitOutcome(client, ctx, sourceId, before);
        if (!outcome) {
          ctx.err(`${set}; stopped waiting: the server runs them (see them with: waypost hooks list ${sourceId})`);
          return;
        }
        ctx.printJson(
          { requeued: String(requeued), ...outcome },
          () =>
            `${set}: ${plural(outcome.newCalls, "call")} new, ${outcome.alreadyStored} already stored (not stored twice)` +
            (outcome.failed > 0
              ? `; ${plural(outcome.failed, "request")} failed again (waypost hooks list ${sourceId} --status failed)`
              : ""),
        );
      }),
    );
}
