import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type pg from "pg";
import { DeliveryOrder, type DeliveryService, DeliveryStatus, DeliveryView, type Delivery } from "../../gen/waypost/v1/delivery_pb.js";
import type { Clock } from "../clock.js";
import { randomUUID } from "node:crypto";
import type { JobTableDriver, BulkReplay, DeliveryFilter } from "../db/job-table/index.js";
import { type AttemptRow, selectAttempts } from "../db/queries/deliveries.js";
import type { DeliveryRow } from "../db/queries/delivery-rows.js";
import { rowsWithinBytes } from "../db/queries/delivery-search.js";
import { destinationExists, loadDestinationConfigs } from "../db/queries/destinations.js";
import { parseLogDeliveryId } from "../db/queries/log-deliveries.js";
import { selectLastAttempts } from "../db/queries/last-attempts.js";
import { insertJob, selectJob } from "../db/queries/background-jobs.js";
import type { RetryParams, RetryProgress } from "../delivery/retry-job.js";
import { retryJobToProto } from "./job-proto.js";
import { decodeCreatedCursor, decodeFeedPosition, encodeCreatedCursor, encodeFeedPosition } from "./delivery-cursors.js";
import { attemptError, statusFilter, statusName, textFilter, timeRange, toProto } from "./delivery-proto.js";
import { destinationStats } from "./destination-stats.js";
import { explainMessage } from "./explain-message.js";
import { profileFilter } from "./profile-filter.js";
import { listFates } from "./list-fates.js";
import { invalidArgument, notFound, requireUuid } from "./errors.js";
import { listPage, pageSize } from "./paging.js";
import { requestsInAttempts, webhookHeaders } from "./request-headers.js";

export interface DeliveryServiceOptions {
  pool: pg.Pool;
  clock: Clock;
  /** Called after a background job (a bulk retry) is stored. */
  onJobCreated?: () => void;
  /** Messages older than this are being purged: their deliveries are not replayed in bulk. */
  retentionMs: number;
  /** A page of ListDeliveries ends early, with a next page token, once its bodies reach this. */
  maxResponseBytes?: number;
  /** The job table's driver (one Postgres's or Citus's): its reads and its replays. */
  jobTable: JobTableDriver;
}

const replayableStatuses = new Set(["failed", "expired", "retrying"] as const);

/** DeliveryService: the delivery log, replays and per-destination figures. */
export function createDeliveryService(options: DeliveryServiceOptions): ServiceImpl<typeof DeliveryService> {
  const { pool, clock, jobTable } = options;
  const { reads } = jobTable;
  const maxBytes = options.maxResponseBytes ?? Infinity;

  /** Body, headers as sent (masked) and attempts, read for a page at once. */
  async function withDetails(rows: DeliveryRow[]): Promise<Delivery[]> {
    const now = clock.now();
    const perCall = rows.filter((r) => !isDerived(r));
    const [attempts, derivedAttempts, configs] = await Promise.all([
      selectAttempts(
        pool,
        perCall.map((r) => r.destination_id),
        perCall.map((r) => r.id),
      ),
      reads.log?.selectAttempts(
        pool,
        rows.filter(isDerived).map((r) => r.id),
      ) ?? [],
      loadDestinationConfigs(pool, [...new Set(rows.map((r) => r.destination_id))]),
    ]);
    attempts.push(...derivedAttempts);
    await nameCarriedCalls(attempts, rows);
    return rows.map((row) => {
      const own = attempts.filter((a) => a.delivery_id === row.id);
      // Time-bound headers (Standard Webhooks' timestamp) as of the latest attempt.
      const at = own.length > 0 ? own[own.length - 1]!.attempted_at : now;
      const config = configs.get(row.destination_id);
      const delivery = toProto(row, {
        attempts: own,
        webhooks: webhookHeaders(config, row, at),
        requestsInAttempts: requestsInAttempts(config),
      });
      return withCursorError(delivery, row);
    });
  }

  /**
   * The calls a batch attempt row of the call log carried, named as a
   * per-call row's delivery_ids name them: by their deliveries' ids (the
   * batch's other calls, shown with the attempt).
   */
  async function nameCarriedCalls(attempts: AttemptRow[], rows: readonly DeliveryRow[]): Promise<void> {
    const carrying = attempts.filter((a) => a.call_pks !== null && a.call_pks.length > 0);
    if (carrying.length === 0 || !reads.log) return;
    const destinationOf = new Map(rows.map((r) => [r.id, r.destination_id]));
    // The calls of one operation are listed with each of its deliveries on the page: named once.
    const calls = new Map<string, { destination: string; pk: string }>();
    for (const a of carrying) {
      const destination = destinationOf.get(a.delivery_id)!;
      for (const pk of a.call_pks!) calls.set(`${destination}/${pk}`, { destination, pk });
    }
    const names = await reads.log.selectCallDeliveryIds(
      pool,
      [...calls.values()].map((c) => c.destination),
      [...calls.values()].map((c) => c.pk),
    );
    for (const a of carrying) {
      const destination = destinationOf.get(a.delivery_id)!;
      const named = a.call_pks!.map((pk) => names.get(`${destination}/${pk}`) ?? `${pk}@${destination}`);
      a.batch_delivery_ids = [...(a.batch_delivery_ids ?? []), ...named];
    }
  }

  async function present(rows: DeliveryRow[], view: DeliveryView): Promise<Delivery[]> {
    if (view !== DeliveryView.BASIC) return withDetails(rows);
    // A derived delivery's only attempt is its batch's success: no error (a pending one's is its cursor's).
    const perCall = rows.filter((r) => !isDerived(r));
    const last = await selectLastAttempts(
      pool,
      perCall.map((r) => r.destination_id),
      perCall.map((r) => r.id),
    );
    const errors = new Map(last.map((a) => [a.delivery_id, attemptError(a)]));
    return rows.map((row) => withCursorError(toProto(row, undefined, errors.get(row.id)), row));
  }

  /** A delivery by id: a per-call row, or one derived from the call log. */
  async function findOne(id: string): Promise<DeliveryRow | undefined> {
    if (!parseLogDeliveryId(id)) return reads.selectDelivery(pool, id);
    return reads.log?.selectDelivery(pool, id);
  }

  async function getOne(rawId: string): Promise<Delivery> {
    const id = deliveryId(rawId);
    const row = await findOne(id);
    if (!row) throw notFound("delivery", id);
    return (await withDetails([row]))[0]!;
  }

  return {
    explainMessage: (req) => explainMessage(pool, req, reads.log),
    listFates: (req) => listFates(pool, reads, req),
    async listDeliveries(req) {
      const filter: DeliveryFilter = {
        destinationId: req.destinationId === "" ? undefined : requireUuid("destinationId", req.destinationId),
        statuses: statusFilter(req.status, req.statuses),
        messageId: textFilter("messageId", req.messageId),
        userId: textFilter("userId", req.userId),
        profileId: await profileFilter(pool, req.profileId),
        ...timeRange(req.since, req.until),
      };
      if (!Object.values(DeliveryView).includes(req.view)) throw invalidArgument("view", `unknown view ${req.view}`);
      const size = pageSize(req.pageSize);
      if (req.order === DeliveryOrder.FINISH_TIME_DESC) {
        const page = await reads.readFinishFeed(pool, filter, decodeFeedPosition(req.pageToken), size, maxBytes);
        return { deliveries: await present(page.rows, req.view), nextPageToken: encodeFeedPosition(page.next) };
      }
      if (req.order !== DeliveryOrder.UNSPECIFIED && req.order !== DeliveryOrder.CREATE_TIME_DESC) {
        throw invalidArgument("order", `unknown order ${req.order}`);
      }
      const before = decodeCreatedCursor(req.pageToken);
      const page = await listPage(
        size,
        (limit) => reads.searchDeliveries(pool, filter, { before, limit }),
        (last) => encodeCreatedCursor(last.cursor_at, last.id),
        (rows) => rowsWithinBytes(rows, maxBytes),
      );
      return { deliveries: await present(page.rows, req.view), nextPageToken: page.nextPageToken };
    },
    async getDelivery(req) {
      return { delivery: await getOne(req.id) };
    },
    async retryDelivery(req) {
      const id = deliveryId(req.id);
      const row = await findOne(id);
      if (!row) throw notFound("delivery", id);
      if (isDerived(row)) {
        // Delivered by its batch, or still to come: nothing to send again.
        throw new ConnectError(
          `delivery ${id} is ${row.status}; only failed, expired or retrying deliveries can be retried`,
          Code.FailedPrecondition,
        );
      }
      if (!(await destinationExists(pool, row.destination_id))) {
        throw new ConnectError(`delivery ${id} belongs to a deleted destination`, Code.FailedPrecondition);
      }
      if (!(await jobTable.replayDelivery(pool, row.destination_id, id, clock.now()))) {
        throw new ConnectError(
          `delivery ${id} is ${row.status}; only failed, expired or retrying deliveries can be retried`,
          Code.FailedPrecondition,
        );
      }
      return { delivery: await getOne(id) };
    },
    async retryDeliveries(req) {
      const destinationId = requireUuid("destinationId", req.destinationId);
      const statuses = (req.statuses.length === 0 ? [DeliveryStatus.FAILED, DeliveryStatus.EXPIRED] : req.statuses).map((s, i) => {
        const name = statusName(s, `statuses[${i}]`);
        if (!replayableStatuses.has(name as never)) {
          throw invalidArgument(`statuses[${i}]`, `${name} deliveries cannot be retried; use failed, expired or retrying`);
        }
        return name as "failed" | "expired" | "retrying";
      });
      const filter: BulkReplay["filter"] = {
        destinationId,
        statuses: [...new Set(statuses)],
        messageId: textFilter("messageId", req.messageId),
        userId: textFilter("userId", req.userId),
        ...timeRange(req.since, req.until),
      };
      if (!(await destinationExists(pool, destinationId))) throw notFound("destination", destinationId);
      const retentionCutoff = new Date(clock.now().getTime() - options.retentionMs);
      const counts = await reads.countReplayable(pool, filter, retentionCutoff);
      const params: RetryParams = {
        statuses: [...filter.statuses],
        ...(filter.messageId ? { messageId: filter.messageId } : {}),
        ...(filter.userId ? { userId: filter.userId } : {}),
        ...(filter.since ? { since: filter.since.toISOString() } : {}),
        ...(filter.until ? { until: filter.until.toISOString() } : {}),
        retentionCutoff: retentionCutoff.toISOString(),
        maxId: counts.maxId ?? "0",
      };
      const progress: RetryProgress = { matched: counts.replayable, retried: 0, notReplayable: counts.pastRetention };
      const row = await insertJob(pool, {
        id: randomUUID(),
        kind: "retry",
        destinationId,
        params: { ...params },
        progress: { ...progress },
        // Nothing to replay: it ends at once (and can still be read).
        state: counts.replayable > 0 && counts.maxId !== null ? "running" : "done",
        at: clock.now(),
      });
      if (row.state === "running") options.onJobCreated?.();
      return { job: retryJobToProto(row) };
    },
    async getRetryJob(req) {
      const id = requireUuid("id", req.id);
      const row = await selectJob(pool, "retry", id);
      if (!row) throw notFound("retry job", id);
      return { job: retryJobToProto(row) };
    },
    async getDestinationStats(req) {
      const destinationId = requireUuid("destinationId", req.destinationId);
      return destinationStats(pool, destinationId, clock.now(), reads.log);
    },
  };
}

/** A per-call delivery's id (a decimal number) or a derived one's (db/queries/log-deliveries.ts). */
function deliveryId(raw: string, field = "id"): string {
  if (raw === "") throw invalidArgument(field, "is required");
  if (!/^[1-9]\d{0,17}$/.test(raw) && !parseLogDeliveryId(raw)) {
    throw invalidArgument(field, `${JSON.stringify(raw.slice(0, 64))} is not a delivery id`);
  }
  return raw;
}

/** Derived from the call log: no row of its own. */
function isDerived(row: DeliveryRow): boolean {
  return parseLogDeliveryId(row.id) !== undefined;
}

/** A derived pending call's error: its cursor's, the batch ahead of it having failed as a whole. */
function withCursorError(delivery: Delivery, row: DeliveryRow): Delivery {
  const error = (row as { last_error?: string | null }).last_error;
  if (error && delivery.lastError === "") delivery.lastError = error;
  return delivery;
}
