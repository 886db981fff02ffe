import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { StatsMinuteSchema, type GetDestinationStatsResponseSchema } from "../../gen/waypost/v1/delivery_pb.js";
import type { DeliveryStatus as StatusName } from "../db/queries/complete-deliveries.js";
import { selectDestinationStats } from "../db/queries/deliveries.js";
import { selectLatencyPercentiles, selectMinuteSeries, type MinuteRow } from "../db/queries/delivery-stats.js";
import type { Queryable } from "../db/queries/store-messages.js";

const minuteMs = 60_000;

/**
 * A destination's figures at `now`. The windows are whole minutes, the same
 * as the series': "last hour" is the current minute and the 59 before it,
 * "last 24 h" the current minute and the 1,439 before it.
 */
export async function destinationStats(
  db: Queryable,
  destinationId: string,
  now: Date,
): Promise<MessageInitShape<typeof GetDestinationStatsResponseSchema>> {
  const minute = Math.floor(now.getTime() / minuteMs) * minuteMs;
  const hour = new Date(minute - 59 * minuteMs);
  const day = new Date(minute - 1439 * minuteMs);
  const [stats, series, latency] = await Promise.all([
    selectDestinationStats(db, destinationId, new Date(now.getTime() - 3_600_000)),
    selectMinuteSeries(db, destinationId, day),
    selectLatencyPercentiles(db, destinationId, hour, day),
  ]);
  const count = (status: StatusName) => BigInt(stats.counts[status] ?? "0");
  const lastHour = totals(series.filter((m) => m.minute >= hour));
  const lastDay = totals(series);
  return {
    destinationId,
    pending: count("pending"),
    retrying: count("retrying"),
    delivered: count("delivered"),
    failed: count("failed"),
    expired: count("expired"),
    cancelled: count("cancelled"),
    attemptsLastHour: BigInt(stats.attempts),
    successfulAttemptsLastHour: BigInt(stats.successes),
    meanLatencyMsLastHour: stats.mean_latency_ms ?? 0,
    deliveredLastHour: BigInt(lastHour.delivered),
    failedLastHour: BigInt(lastHour.failed),
    expiredLastHour: BigInt(lastHour.expired),
    deliveredLast24h: BigInt(lastDay.delivered),
    failedLast24h: BigInt(lastDay.failed),
    expiredLast24h: BigInt(lastDay.expired),
    successRateLastHour: successRate(lastHour),
    successRateLast24h: successRate(lastDay),
    p50LatencyMsLastHour: latency.p50_hour ?? 0,
    p99LatencyMsLastHour: latency.p99_hour ?? 0,
    p50LatencyMsLast24h: latency.p50_day ?? 0,
    p99LatencyMsLast24h: latency.p99_day ?? 0,
    backlog: count("pending") + count("retrying"),
    series: series.map((m) =>
      create(StatsMinuteSchema, {
        startTime: timestampFromDate(m.minute),
        delivered: BigInt(m.delivered),
        failed: BigInt(m.failed),
        expired: BigInt(m.expired),
        attempts: BigInt(m.attempts),
        successfulAttempts: BigInt(m.successes),
        p50LatencyMs: m.p50,
        p99LatencyMs: m.p99,
      }),
    ),
  };
}

function totals(minutes: readonly MinuteRow[]): { delivered: number; failed: number; expired: number } {
  const sum = { delivered: 0, failed: 0, expired: 0 };
  for (const m of minutes) {
    sum.delivered += m.delivered;
    sum.failed += m.failed;
    sum.expired += m.expired;
  }
  return sum;
}

/** Delivered out of everything that reached delivered, failed or expired; undefined when nothing did. */
function successRate(sum: { delivered: number; failed: number; expired: number }): number | undefined {
  const finished = sum.delivered + sum.failed + sum.expired;
  return finished === 0 ? undefined : sum.delivered / finished;
}
