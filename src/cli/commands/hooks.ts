import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Command } from "commander";
import {
  HookRequestStatus,
  HookService,
  ListHookRequestsResponseSchema,
  TestSourceTransformResponseSchema,
  type HookRequest,
} from "../../../gen/waypost/v1/hook_pb.js";
import { create } from "@bufbuild/protobuf";
import { listPages } from "./list-pages.js";
import type { Wire } from "../context.js";
import { UsageError } from "../errors.js";
import { collect, parseCount, parseTime, table, time } from "../format.js";
import { readFlagFile } from "./hook-source-flags.js";
import { registerHookReprocess } from "./hook-reprocess.js";
import { resolveSourceRef } from "./named-refs.js";

const statusNames: Record<string, HookRequestStatus> = {
  pending: HookRequestStatus.PENDING,
  processed: HookRequestStatus.PROCESSED,
  failed: HookRequestStatus.FAILED,
  duplicate: HookRequestStatus.DUPLICATE,
};

export function hookStatusText(status: HookRequestStatus): string {
  return Object.entries(statusNames).find(([, s]) => s === status)?.[0] ?? "unknown";
}

function parseHookStatus(text: string): HookRequestStatus {
  const status =
    statusNames[
      text
        .trim()
        .toLowerCase()
        .replace(/^hook_request_status_/, "")
    ];
  if (status === undefined) throw new UsageError(`--status: unknown status "${text}" (one of ${Object.keys(statusNames).join(", ")})`);
  return status;
}

/** One line of text: a folded error or body never breaks the table. */
function oneLine(text: string, max = 120): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** `hooks list|reprocess|test`: a webhook source's stored requests. */
export function registerHooks(program: Command, wire: Wire): void {
  const hooks = program.command("hooks").description("the requests webhook sources received: list, reprocess, test a transform");

  hooks
    .command("list")
    .description("a webhook source's requests, newest first")
    .argument("<source>", "source id or name")
    .option("--status <status>", "only these: pending, processed, failed or duplicate")
    .option("--since <time>", "received at or after (ISO 8601, or 30m, 2h, 7d back)")
    .option("--limit <n>", "at most this many (default 100)")
    .action(
      wire(async (ctx, ref: string, flags: { status?: string; since?: string; limit?: string }) => {
        const status = flags.status === undefined ? HookRequestStatus.UNSPECIFIED : parseHookStatus(flags.status);
        const since = flags.since === undefined ? undefined : timestampFromDate(parseTime(flags.since, "--since"));
        const limit = flags.limit === undefined ? 100 : parseCount(flags.limit, "--limit");
        const sourceId = await resolveSourceRef(ctx, ref);
        const client = ctx.admin(HookService);
        const listed = await listPages(
          (pageToken, pageSize) => client.listHookRequests({ sourceId, status, since, pageSize, pageToken }, { signal: ctx.signal }),
          (page) => page.requests,
          limit,
        );
        const all = create(ListHookRequestsResponseSchema, { requests: listed.items.slice(0, limit) });
        ctx.print(ListHookRequestsResponseSchema, all, () =>
          table(
            ["ID", "RECEIVED", "STATUS", "CALLS", "ERROR OR BODY"],
            all.requests.map((r: HookRequest) => [
              r.id,
              time(r.receiveTime),
              hookStatusText(r.status),
              r.messageIds.length === 0 ? "-" : r.messageIds.join(","),
              oneLine(r.error || r.body),
            ]),
          ),
        );
      }),
    );

  registerHookReprocess(hooks, wire);

  hooks
    .command("test")
    .description("the calls a transform makes from stored requests, storing nothing")
    .argument("<source>", "source id or name")
    .option("--transform-file <file>", "try this transform (default: the source's own)")
    .option("--id <request-id>", "this request (repeat for several)", collect)
    .option("--sample <n>", "without --id: the most recent n requests (default 20, at most 100)")
    .action(
      wire(async (ctx, ref: string, flags: { transformFile?: string; id?: string[]; sample?: string }) => {
        const transform = flags.transformFile === undefined ? "" : readFlagFile(flags.transformFile, "--transform-file");
        const sampleSize = flags.sample === undefined ? 0 : parseCount(flags.sample, "--sample");
        const id = await resolveSourceRef(ctx, ref);
        const response = await ctx.admin(HookService).testSourceTransform({
          source: { id, webhook: { transform } },
          requestIds: flags.id ?? [],
          sampleSize,
        });
        ctx.print(TestSourceTransformResponseSchema, response, () => {
          if (response.requests.length === 0) return "no stored requests to test";
          const rows = response.requests.flatMap((r) =>
            r.error
              ? [[r.requestId, "error", "-", oneLine(r.error, 400)]]
              : r.calls.length === 0
                ? [[r.requestId, "no calls", "-", "-"]]
                : r.calls.map((c) => [r.requestId, c.type, c.messageId, c.json]),
          );
          return table(["REQUEST", "TYPE", "MESSAGE ID", "CALL OR ERROR"], rows);
        });
      }),
    );
}
