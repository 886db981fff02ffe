import { timestampDate } from "@bufbuild/protobuf/wkt";
import { toJson } from "@bufbuild/protobuf";
import type { Command } from "commander";
import {
  DeliveryService,
  GetDestinationStatsResponseSchema,
  type GetDestinationStatsResponse,
  type HeldBack,
} from "../../../gen/waypost/v1/delivery_pb.js";
import { DestinationService } from "../../../gen/waypost/v1/destination_pb.js";
import { table } from "../format.js";
import type { Wire } from "../context.js";
import { listAllDestinations, resolveDestinationRef } from "./named-refs.js";

/**
 * Stats RPCs in flight at once. Each call listens on the command's abort
 * signal (Ctrl-C) while it runs, so one call per destination at once put
 * more listeners on it than Node's limit of 10 (a MaxListenersExceededWarning
 * with many destinations), and as many queries on the server.
 */
const statsInFlight = 4;

/** `fn` over `items`, at most `limit` at once, the results in the items' order. */
async function mapInTurns<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

const percent = (rate: number | undefined) => (rate === undefined ? "-" : `${(rate * 100).toFixed(1)}%`);

/** The calls held back, by reason, in a few words: "filter 2, consent 1"; "0" for none. */
export function heldBackText(held: HeldBack | undefined): string {
  if (!held) return "0";
  const counts: Array<[string, bigint]> = [
    ["filter", held.filter],
    ["consent", held.consent],
    ["subscriptions", held.subscriptions],
    ["transform", held.transform],
    ["disabled", held.disabled],
    ["integrations off", held.integrationsOff],
  ];
  const text = counts.filter(([, n]) => n > 0n).map(([reason, n]) => `${reason} ${n}`);
  return text.length === 0 ? "0" : text.join(", ");
}

/** A lake's files written, a line ("" for other kinds). */
function lakeFilesText(stats: GetDestinationStatsResponse): string {
  const files = stats.lakeFiles;
  if (!files) return "";
  const at = files.lastFileTime ? timestampDate(files.lastFileTime).toISOString() : "";
  return `files written: ${files.files} (${files.rows} rows, ${files.bytes} bytes); last ${files.lastFile} (${files.lastFileRows} rows, ${files.lastFileBytes} bytes) at ${at}\n`;
}

function rows(stats: readonly GetDestinationStatsResponse[], names: ReadonlyMap<string, string>): string {
  return table(
    [
      "DESTINATION",
      "NAME",
      "DELIVERED 1H",
      "FAILED 1H",
      "EXPIRED 1H",
      "DELIVERED 24H",
      "FAILED 24H",
      "EXPIRED 24H",
      "SUCCESS 24H",
      "P50 24H",
      "P99 24H",
      "FAILED TRIES 1H",
      "FAILED TRIES 24H",
      "BACKLOG",
      "HELD BACK 24H",
    ],
    stats.map((s) => [
      s.destinationId,
      names.get(s.destinationId) ?? "",
      String(s.deliveredLastHour),
      String(s.failedLastHour),
      String(s.expiredLastHour),
      String(s.deliveredLast24h),
      String(s.failedLast24h),
      String(s.expiredLast24h),
      percent(s.successRateLast24h),
      `${s.p50LatencyMsLast24h} ms`,
      `${s.p99LatencyMsLast24h} ms`,
      // Attempts that failed, retryable ones too: a dead endpoint shows here before any delivery fails.
      String(s.failedAttemptsLastHour),
      String(s.failedAttemptsLast24h),
      String(s.backlog),
      heldBackText(s.heldBackLast24h),
    ]),
  );
}

export function registerStats(program: Command, wire: Wire): void {
  program
    .command("stats")
    .description(
      "delivered, failed and expired in the last hour and 24 h, success rate, latency, failed attempts, backlog, calls held back by reason (--json adds the per-minute series)",
    )
    .option("--destination <id|name>", "one destination (default: every destination)")
    .action(
      wire(async (ctx, flags: { destination?: string }) => {
        const deliveries = ctx.admin(DeliveryService);
        const stats = (id: string) => deliveries.getDestinationStats({ destinationId: id }, { signal: ctx.signal });
        if (flags.destination) {
          const id = await resolveDestinationRef(ctx, flags.destination);
          const [one, { destination }] = await Promise.all([
            stats(id),
            ctx.admin(DestinationService).getDestination({ id }, { signal: ctx.signal }),
          ]);
          ctx.print(
            GetDestinationStatsResponseSchema,
            one,
            () =>
              `${rows([one], new Map([[id, destination?.name ?? ""]]))}${one.series.length} active minutes in the last 24 h (--json shows them)\n${lakeFilesText(one)}`,
          );
          return;
        }
        const destinations = await listAllDestinations(ctx);
        const all = await mapInTurns(destinations, statsInFlight, (d) => stats(d.id));
        // Several RPCs: one document with each response under "destinations".
        ctx.printJson({ destinations: all.map((s) => toJson(GetDestinationStatsResponseSchema, s)) }, () =>
          rows(all, new Map(destinations.map((d) => [d.id, d.name]))),
        );
      }),
    );
}
