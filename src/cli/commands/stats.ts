import { toJson } from "@bufbuild/protobuf";
import type { Command } from "commander";
import {
  DeliveryService,
  GetDestinationStatsResponseSchema,
  type GetDestinationStatsResponse,
} from "../../../gen/waypost/v1/delivery_pb.js";
import { table } from "../format.js";
import type { Wire } from "../context.js";
import { listAllDestinations, resolveDestinationRef } from "./destination-ref.js";

const percent = (rate: number | undefined) => (rate === undefined ? "-" : `${(rate * 100).toFixed(1)}%`);

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
    ]),
  );
}

export function registerStats(program: Command, wire: Wire): void {
  program
    .command("stats")
    .description(
      "delivered, failed and expired in the last hour and 24 h, success rate, latency, failed attempts, backlog (--json adds the per-minute series)",
    )
    .option("--destination <id|name>", "one destination (default: every destination)")
    .action(
      wire(async (ctx, flags: { destination?: string }) => {
        const deliveries = ctx.admin(DeliveryService);
        if (flags.destination) {
          const stats = await deliveries.getDestinationStats({ destinationId: await resolveDestinationRef(ctx, flags.destination) });
          ctx.print(
            GetDestinationStatsResponseSchema,
            stats,
            () => `${rows([stats], new Map())}${stats.series.length} active minutes in the last 24 h (--json shows them)\n`,
          );
          return;
        }
        const destinations = await listAllDestinations(ctx);
        const all = await Promise.all(
          destinations.map((d) => deliveries.getDestinationStats({ destinationId: d.id }, { signal: ctx.signal })),
        );
        // Several RPCs: one document with each response under "destinations".
        ctx.printJson({ destinations: all.map((s) => toJson(GetDestinationStatsResponseSchema, s)) }, () =>
          rows(all, new Map(destinations.map((d) => [d.id, d.name]))),
        );
      }),
    );
}
