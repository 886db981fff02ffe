import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type pg from "pg";
import {
  AttemptOutcome,
  DeliveryAttemptSchema,
  DeliverySchema,
  DeliveryService,
  DeliveryStatus,
  type Delivery,
} from "../../gen/waypost/v1/delivery_pb.js";
import type { Clock } from "../clock.js";
import { replayDelivery, type DeliveryStatus as StatusName } from "../db/job-table/index.js";
import {
  listDeliveryRows,
  selectAttempts,
  selectDelivery,
  selectDestinationStats,
  type AttemptRow,
  type DeliveryRow,
} from "../db/queries/deliveries.js";
import { destinationExists } from "../db/queries/destinations.js";
import { invalidArgument, notFound, requireUuid } from "./errors.js";
import { decodePageToken, encodePageToken, pageSize } from "./paging.js";

export interface DeliveryServiceOptions {
  pool: pg.Pool;
  clock: Clock;
}

const statusNames: Record<StatusName, DeliveryStatus> = {
  pending: DeliveryStatus.PENDING,
  retrying: DeliveryStatus.RETRYING,
  delivered: DeliveryStatus.DELIVERED,
  failed: DeliveryStatus.FAILED,
  expired: DeliveryStatus.EXPIRED,
  cancelled: DeliveryStatus.CANCELLED,
};

const outcomes: Record<AttemptRow["outcome"], AttemptOutcome> = {
  success: AttemptOutcome.SUCCESS,
  retryable: AttemptOutcome.RETRYABLE,
  permanent: AttemptOutcome.PERMANENT,
  abandoned: AttemptOutcome.ABANDONED,
};

/** DeliveryService: the delivery log, replays and per-destination figures. */
export function createDeliveryService(options: DeliveryServiceOptions): ServiceImpl<typeof DeliveryService> {
  const { pool, clock } = options;

  async function withAttempts(rows: DeliveryRow[]): Promise<Delivery[]> {
    const attempts = await selectAttempts(
      pool,
      rows.map((r) => r.destination_id),
      rows.map((r) => r.id),
    );
    return rows.map((row) => toProto(row, attempts.filter((a) => a.delivery_id === row.id)));
  }

  async function getOne(rawId: string): Promise<Delivery> {
    const id = deliveryId(rawId);
    const row = await selectDelivery(pool, id);
    if (!row) throw notFound("delivery", id);
    return (await withAttempts([row]))[0]!;
  }

  return {
    async listDeliveries(req) {
      const destinationId = requireUuid("destinationId", req.destinationId);
      const size = pageSize(req.pageSize);
      const cursor = decodePageToken(req.pageToken);
      const rows = await listDeliveryRows(pool, {
        destinationId,
        status: statusFilter(req.status),
        beforeId: cursor === undefined ? undefined : deliveryId(cursor, "pageToken"),
        limit: size + 1,
      });
      const page = rows.slice(0, size);
      const last = page[page.length - 1];
      return {
        deliveries: await withAttempts(page),
        nextPageToken: rows.length > size && last ? encodePageToken(last.id) : "",
      };
    },
    async getDelivery(req) {
      return { delivery: await getOne(req.id) };
    },
    async retryDelivery(req) {
      const id = deliveryId(req.id);
      const row = await selectDelivery(pool, id);
      if (!row) throw notFound("delivery", id);
      if (!(await destinationExists(pool, row.destination_id))) {
        throw new ConnectError(`delivery ${id} belongs to a deleted destination`, Code.FailedPrecondition);
      }
      if (!(await replayDelivery(pool, row.destination_id, id, clock.now()))) {
        throw new ConnectError(
          `delivery ${id} is ${row.status}; only failed, expired or retrying deliveries can be retried`,
          Code.FailedPrecondition,
        );
      }
      return { delivery: await getOne(id) };
    },
    async getDestinationStats(req) {
      const destinationId = requireUuid("destinationId", req.destinationId);
      const stats = await selectDestinationStats(pool, destinationId, new Date(clock.now().getTime() - 3_600_000));
      const count = (status: StatusName) => BigInt(stats.counts[status] ?? "0");
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
      };
    },
  };
}

function deliveryId(raw: string, field = "id"): string {
  if (raw === "") throw invalidArgument(field, "is required");
  if (!/^[1-9]\d{0,17}$/.test(raw)) throw invalidArgument(field, `${JSON.stringify(raw.slice(0, 64))} is not a delivery id`);
  return raw;
}

function statusFilter(status: DeliveryStatus): StatusName | undefined {
  if (status === DeliveryStatus.UNSPECIFIED) return undefined;
  const entry = Object.entries(statusNames).find(([, value]) => value === status);
  if (!entry) throw invalidArgument("status", `unknown delivery status ${status}`);
  return entry[0] as StatusName;
}

function toProto(row: DeliveryRow, attempts: AttemptRow[]): Delivery {
  const open = row.status === "pending" || row.status === "retrying";
  return create(DeliverySchema, {
    id: row.id,
    destinationId: row.destination_id,
    sourceId: row.source_id,
    messageId: row.message_id,
    type: row.type,
    status: statusNames[row.status],
    attemptCount: row.attempt_count,
    createTime: timestampFromDate(row.created_at),
    firstAttemptTime: row.first_attempt_at ? timestampFromDate(row.first_attempt_at) : undefined,
    nextAttemptTime: open ? timestampFromDate(row.run_at) : undefined,
    finalizeTime: row.finalized_at ? timestampFromDate(row.finalized_at) : undefined,
    attempts: attempts.map((a) =>
      create(DeliveryAttemptSchema, {
        attempt: a.attempt,
        url: a.url,
        attemptTime: timestampFromDate(a.attempted_at),
        outcome: outcomes[a.outcome],
        statusCode: a.status_code ?? 0,
        error: a.error ?? "",
        latencyMs: a.latency_ms,
        responseBody: a.response_body ?? "",
      }),
    ),
  });
}
