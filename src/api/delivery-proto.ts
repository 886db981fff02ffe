import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import {
  AttemptOutcome,
  DeliveryAttemptSchema,
  DeliverySchema,
  DeliveryStatus,
  WebhookHeadersSchema,
  type Delivery,
} from "../../gen/waypost/v1/delivery_pb.js";
import type { DeliveryStatus as StatusName } from "../db/job-table/index.js";
import type { AttemptRow } from "../db/queries/deliveries.js";
import type { DeliveryRow } from "../db/queries/delivery-rows.js";
import { payloadText } from "../ingest/payload.js";
import { requireStorableText } from "./destination-validation.js";
import { invalidArgument } from "./errors.js";
import type { WebhookHeaders } from "./request-headers.js";

export const statusNames: Record<StatusName, DeliveryStatus> = {
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

export function statusName(status: DeliveryStatus, field: string): StatusName {
  const entry = Object.entries(statusNames).find(([, value]) => value === status);
  if (!entry) throw invalidArgument(field, `unknown delivery status ${status}`);
  return entry[0] as StatusName;
}

/** The union of `status` (one, UNSPECIFIED for none) and `statuses`; undefined when neither narrows. */
export function statusFilter(status: DeliveryStatus, statuses: readonly DeliveryStatus[]): StatusName[] | undefined {
  const names = new Set<StatusName>();
  if (status !== DeliveryStatus.UNSPECIFIED) names.add(statusName(status, "status"));
  statuses.forEach((s, i) => {
    if (s === DeliveryStatus.UNSPECIFIED) throw invalidArgument(`statuses[${i}]`, "must be a delivery status");
    names.add(statusName(s, `statuses[${i}]`));
  });
  return names.size === 0 ? undefined : [...names];
}

/** since/until: both optional, since before until. */
export function timeRange(since: Timestamp | undefined, until: Timestamp | undefined): { since?: Date; until?: Date } {
  const range = { since: since ? timestampDate(since) : undefined, until: until ? timestampDate(until) : undefined };
  if (range.since && Number.isNaN(range.since.getTime())) throw invalidArgument("since", "is not a valid time");
  if (range.until && Number.isNaN(range.until.getTime())) throw invalidArgument("until", "is not a valid time");
  if (range.since && range.until && range.since >= range.until) throw invalidArgument("until", "must be after since");
  return { ...(range.since ? { since: range.since } : {}), ...(range.until ? { until: range.until } : {}) };
}

/**
 * A messageId or userId filter: empty means none. Stored ids never hold NUL
 * (Postgres text cannot), so one in a filter is the caller's mistake, and
 * would otherwise fail as the query's parameter.
 */
export function textFilter(field: string, value: string): string | undefined {
  if (value === "") return undefined;
  if (value.length > 1000) throw invalidArgument(field, "is longer than 1000 characters");
  requireStorableText(field, value);
  return value;
}

export interface DeliveryDetails {
  attempts: AttemptRow[];
  webhooks: WebhookHeaders[];
  /** The destination builds its requests from the call: the body is the stored call; each attempt has what it sent. */
  requestsInAttempts?: boolean;
}

/** An attempt as lastErrorOf reads it. */
type AttemptResult = Pick<AttemptRow, "outcome" | "status_code" | "error">;

/** What went wrong in an attempt: its error, else its HTTP status; "" for a success. */
export function attemptError(attempt: AttemptResult | undefined): string {
  if (!attempt || attempt.outcome === "success") return "";
  return attempt.error || (attempt.status_code ? `HTTP ${attempt.status_code}` : attempt.outcome);
}

/** The last attempt's error among a delivery's attempts (ordered by attempt): its first failed request. */
export function lastErrorOf(attempts: readonly AttemptRow[]): string {
  const last = attempts.reduce((n, a) => Math.max(n, a.attempt), 0);
  const ofLast = attempts.filter((a) => a.attempt === last);
  return attemptError(ofLast.find((a) => a.outcome !== "success") ?? ofLast[0]);
}

/** The batch's other deliveries shown with an attempt: the first ones by id. */
const maxBatchDeliveries = 100;

function otherDeliveries(ids: readonly string[] | null, own: string): string[] {
  if (!ids) return [];
  return [...new Set(ids)].filter((id) => id !== own).slice(0, maxBatchDeliveries);
}

/**
 * A delivery for the API; details (body, headers, attempts) only in the
 * full view. `lastError` is the basic view's (the full view's comes from
 * its attempts).
 */
export function toProto(row: DeliveryRow, details: DeliveryDetails | undefined, lastError = ""): Delivery {
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
    userId: row.user_id ?? "",
    anonymousId: payloadText(row.payload, "anonymousId"),
    lastError: details ? lastErrorOf(details.attempts) : lastError,
    ...(details
      ? {
          // What the last attempt sent: the stored body unless the destination's rules changed it (or
          // it builds requests of its own: then the stored call, the requests being the attempts').
          body: row.sent_body ?? row.payload,
          requestsInAttempts: details.requestsInAttempts ?? false,
          requestHeaders: details.webhooks[0]?.headers ?? {},
          webhookHeaders: details.webhooks.map((w) => create(WebhookHeadersSchema, w)),
          attempts: details.attempts.map((a) =>
            create(DeliveryAttemptSchema, {
              attempt: a.attempt,
              url: a.url,
              attemptTime: timestampFromDate(a.attempted_at),
              outcome: outcomes[a.outcome],
              statusCode: a.status_code ?? 0,
              error: a.error ?? "",
              latencyMs: a.latency_ms,
              responseBody: a.response_body ?? "",
              destinationEtag: a.destination_revision === null ? "" : `r${a.destination_revision}`,
              discardedValues: a.discarded_values ?? 0,
              subscription: a.subscription ?? "",
              method: a.method ?? "",
              requestHeaders: a.request_headers ?? {},
              requestBody: a.request_body ?? "",
              requestBodyBytes: a.request_body_bytes ?? 0,
              batchId: a.batch_id ?? "",
              batchCalls: a.batch_calls ?? 0,
              batchDeliveryIds: otherDeliveries(a.batch_delivery_ids, row.id),
            }),
          ),
        }
      : {}),
  });
}
