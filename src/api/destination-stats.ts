import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  HeldBackSchema,
  StatsMinuteSchema,
  StatsWindowSchema,
  type GetDestinationStatsResponseSchema,
} from "../../gen/waypost/v1/delivery_pb.js";
import type { LogDeliveryReads, DeliveryStatus as StatusName } from "../db/job-table/index.js";
import { selectDestinationStats } from "../db/queries/deliveries.js";
import { selectLatencyPercentiles, selectMinuteSeries, type LatencyRow, type MinuteRow } from "../db/queries/delivery-stats.js";
import type { Queryable } from "../db/pool.js";
import { selectLakeFilesWritten } from "../db/queries/lake-files-written.js";
import { type HeldBackCountRow, type HeldBackReason, selectHeldBackPerMinute } from "../db/queries/message-fates.js";

const minuteMs = 60_000;
/** The windows of `windows`, in minutes: the last hour, 6 hours and 24 hours. */
const windowMinutes = [60, 360, 1440] as const;

/**
 * A destination's figures at `now`. The windows are whole minutes, the same
 * as the series': "last hour" is the current minute and the 59 before it,
 * "last 24 h" the current minute and the 1,439 before it. A destination on
 * the call log (`log` reads) adds the calls its batches delivered, by the
 * minute each batch finished, and the calls its cursors have still to reach.
 */
export async function destinationStats(
  db: Queryable,
  destinationId: string,
  now: Date,
  log?: LogDeliveryReads,
): Promise<MessageInitShape<typeof GetDestinationStatsResponseSchema>> {
  const minute = Math.floor(now.getTime() / minuteMs) * minuteMs;
  const starts = windowMinutes.map((n) => new Date(minute - (n - 1) * minuteMs));
  const [stats, deliverySeries, latency, heldBackSeries, logStats, lakeFiles] = await Promise.all([
    selectDestinationStats(db, destinationId, new Date(now.getTime() - 3_600_000)),
    selectMinuteSeries(db, destinationId, starts[2]!),
    selectLatencyPercentiles(db, destinationId, starts),
    selectHeldBackPerMinute(db, destinationId, starts[2]!),
    log?.selectStats(db, destinationId, starts[2]!),
    selectLakeFilesWritten(db, destinationId),
  ]);
  const series = withHeldBack(withLogDelivered(deliverySeries, logStats?.minutes ?? []), heldBackSeries);
  const logCounts: Partial<Record<StatusName, number>> = logStats?.counts ?? {};
  const count = (status: StatusName) => BigInt(stats.counts[status] ?? "0") + BigInt(logCounts[status] ?? 0);
  const [lastHour, last6h, lastDay] = starts.map((start) => totals(series.filter((m) => m.minute >= start))) as [Totals, Totals, Totals];
  const [hourLatency, , dayLatency] = latency as [LatencyRow, LatencyRow, LatencyRow];
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
    p50LatencyMsLastHour: hourLatency.p50 ?? 0,
    p99LatencyMsLastHour: hourLatency.p99 ?? 0,
    p50LatencyMsLast24h: dayLatency.p50 ?? 0,
    p99LatencyMsLast24h: dayLatency.p99 ?? 0,
    failedAttemptsLastHour: BigInt(lastHour.failedAttempts),
    failedAttemptsLast24h: BigInt(lastDay.failedAttempts),
    windows: [lastHour, last6h, lastDay].map((sum, i) =>
      create(StatsWindowSchema, {
        minutes: windowMinutes[i]!,
        delivered: BigInt(sum.delivered),
        failed: BigInt(sum.failed),
        expired: BigInt(sum.expired),
        successRate: successRate(sum),
        attempts: BigInt(sum.attempts),
        successfulAttempts: BigInt(sum.successes),
        failedAttempts: BigInt(sum.failedAttempts),
        p50LatencyMs: latency[i]!.p50 ?? 0,
        p99LatencyMs: latency[i]!.p99 ?? 0,
        filtered: BigInt(sum.filtered),
        heldBack: create(HeldBackSchema, heldBackCounts(sum.heldBack)),
      }),
    ),
    backlog: count("pending") + count("retrying"),
    series: series.map((m) =>
      create(StatsMinuteSchema, {
        startTime: timestampFromDate(m.minute),
        delivered: BigInt(m.delivered),
        failed: BigInt(m.failed),
        expired: BigInt(m.expired),
        attempts: BigInt(m.attempts),
        successfulAttempts: BigInt(m.successes),
        failedAttempts: BigInt(m.failedAttempts),
        p50LatencyMs: m.p50,
        p99LatencyMs: m.p99,
        filtered: BigInt(m.filtered),
      }),
    ),
    filteredLast24h: BigInt(lastDay.filtered),
    heldBackLast24h: create(HeldBackSchema, heldBackCounts(lastDay.heldBack)),
    discardedValuesLastHour: BigInt(lastHour.discarded),
    discardedValuesLast24h: BigInt(lastDay.discarded),
    ...(lakeFiles
      ? {
          lakeFiles: {
            files: BigInt(lakeFiles.files),
            rows: BigInt(lakeFiles.rows),
            bytes: BigInt(lakeFiles.bytes),
            lastFile: lakeFiles.last_file,
            lastFileRows: BigInt(lakeFiles.last_file_rows),
            lastFileBytes: BigInt(lakeFiles.last_file_bytes),
            lastFileTime: timestampFromDate(lakeFiles.last_file_at),
          },
        }
      : {}),
  };
}

type HeldBack = Record<HeldBackReason, number>;
type Minute = MinuteRow & { filtered: number; heldBack: HeldBack };
/** The counts a window sums over its minutes (held-back calls too, by reason). */
const summed = ["delivered", "failed", "expired", "attempts", "successes", "failedAttempts", "filtered", "discarded"] as const;
type Totals = Pick<Minute, (typeof summed)[number] | "heldBack">;

/** The reasons that make a call filtered (the others: disabled, integrations off). */
const filteredReasons = new Set<HeldBackReason>(["filter", "consent", "subscriptions", "transform"]);

const noneHeldBack = (): HeldBack => ({ filter: 0, consent: 0, subscriptions: 0, transform: 0, disabled: 0, integrations_off: 0 });

const noTotals = (): Totals => ({
  delivered: 0,
  failed: 0,
  expired: 0,
  attempts: 0,
  successes: 0,
  failedAttempts: 0,
  filtered: 0,
  discarded: 0,
  heldBack: noneHeldBack(),
});

/** The delivery minutes with the calls the log's batches delivered in each (a minute with only those is in it too). */
function withLogDelivered(deliveries: readonly MinuteRow[], logMinutes: readonly { minute: Date; delivered: number }[]): MinuteRow[] {
  if (logMinutes.length === 0) return [...deliveries];
  const byMinute = new Map<number, MinuteRow>(deliveries.map((m) => [m.minute.getTime(), { ...m }]));
  for (const l of logMinutes) {
    const at = l.minute.getTime();
    const minute = byMinute.get(at) ?? { ...noTotals(), minute: l.minute, p50: 0, p99: 0 };
    minute.delivered += l.delivered;
    byMinute.set(at, minute);
  }
  return [...byMinute.values()].sort((a, b) => a.minute.getTime() - b.minute.getTime());
}

/** The delivery minutes and the held-back ones as one series, oldest first; a minute with only held-back calls is in it too. */
function withHeldBack(deliveries: readonly MinuteRow[], heldBack: readonly HeldBackCountRow[]): Minute[] {
  const byMinute = new Map<number, Minute>(deliveries.map((m) => [m.minute.getTime(), { ...m, filtered: 0, heldBack: noneHeldBack() }]));
  for (const h of heldBack) {
    const at = h.minute.getTime();
    let minute = byMinute.get(at);
    if (!minute) {
      minute = { minute: h.minute, p50: 0, p99: 0, ...noTotals() };
      byMinute.set(at, minute);
    }
    // A reason recorded by a newer Waypost than this one knows is left out, not miscounted.
    if (!(h.reason in minute.heldBack)) continue;
    minute.heldBack[h.reason] += h.calls;
    if (filteredReasons.has(h.reason)) minute.filtered += h.calls;
  }
  return [...byMinute.values()].sort((a, b) => a.minute.getTime() - b.minute.getTime());
}

function totals(minutes: readonly Minute[]): Totals {
  const sum = noTotals();
  for (const m of minutes) {
    for (const count of summed) sum[count] += m[count];
    for (const reason of Object.keys(sum.heldBack) as HeldBackReason[]) sum.heldBack[reason] += m.heldBack[reason];
  }
  return sum;
}

function heldBackCounts(held: HeldBack) {
  return {
    filter: BigInt(held.filter),
    consent: BigInt(held.consent),
    subscriptions: BigInt(held.subscriptions),
    transform: BigInt(held.transform),
    disabled: BigInt(held.disabled),
    integrationsOff: BigInt(held.integrations_off),
  };
}

/** Delivered out of everything that reached delivered, failed or expired; undefined when nothing did. */
function successRate(sum: Totals): number | undefined {
  const finished = sum.delivered + sum.failed + sum.expired;
  return finished === 0 ? undefined : sum.delivered / finished;
}
