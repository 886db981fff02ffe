import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type pg from "pg";
import {
  HookRequestSchema,
  HookRequestStatus,
  ProducedCallSchema,
  TestedHookRequestSchema,
  type HookRequest,
  type HookService,
} from "../../gen/waypost/v1/hook_pb.js";
import { HookVerifier } from "../../gen/waypost/v1/source_pb.js";
import type { Clock } from "../clock.js";
import {
  listHookRequestRows,
  requeueHookRequests,
  selectHookRequestsById,
  selectHookSettingsJson,
  selectRecentHookRequests,
  type HookRequestRow,
  type HookRequestStatus as StoredStatus,
} from "../db/queries/hook-requests.js";
import { callsOfHookRequest } from "../ingest/hooks/hook-calls.js";
import { readProcessingSettings } from "../ingest/hooks/hook-input.js";
import { validateHookTransform } from "../ingest/hooks/hook-settings.js";
import type { TransformSandboxes } from "../sandbox/transform-sandbox.js";
import { invalidArgument, notFound, requireUuid } from "./errors.js";
import { decodePageToken, encodePageToken, listPage, pageSize } from "./paging.js";

export interface HookServiceOptions {
  pool: pg.Pool;
  clock: Clock;
  sandboxes: TransformSandboxes;
  /** Requests of the source were set back to pending: wake a processor (this process's, or every process's by NOTIFY). */
  onRequeued?: ((sourceId: string) => void) | undefined;
}

const maxSample = 100;
const maxRequestIds = 1_000;

const statusToProto: Record<StoredStatus, HookRequestStatus> = {
  pending: HookRequestStatus.PENDING,
  processed: HookRequestStatus.PROCESSED,
  failed: HookRequestStatus.FAILED,
  duplicate: HookRequestStatus.DUPLICATE,
};

/** HookService: what webhook sources received, run again, and drafts of their transforms tried. */
export function createHookService(options: HookServiceOptions): ServiceImpl<typeof HookService> {
  const { pool, sandboxes } = options;

  /** The webhook source's stored settings, or NOT_FOUND. */
  async function settingsOf(field: string, id: string) {
    const sourceId = requireUuid(field, id);
    const json = await selectHookSettingsJson(pool, sourceId);
    if (!json) throw notFound("webhook source", sourceId);
    return { sourceId, settings: readProcessingSettings(json) };
  }

  return {
    async listHookRequests(req) {
      const { sourceId } = await settingsOf("sourceId", req.sourceId);
      const size = pageSize(req.pageSize, 50, 200);
      const before = decodeCursor(req.pageToken);
      const filter = { sourceId, status: statusFromProto(req.status), since: req.since ? timestampDate(req.since) : undefined, before };
      const page = await listPage(
        size,
        (limit) => listHookRequestRows(pool, { ...filter, limit }),
        (last) => encodePageToken(`${last.cursor_at}|${last.id}`),
      );
      return { requests: page.rows.map(toProto), nextPageToken: page.nextPageToken };
    },

    async reprocessHookRequests(req) {
      const { sourceId } = await settingsOf("sourceId", req.sourceId);
      const ids = requestIds(req.requestIds);
      if (ids.length === 0 && !req.since) throw invalidArgument("since", "is required without requestIds");
      const until = req.until ? timestampDate(req.until) : options.clock.now();
      const requeued = await requeueHookRequests(pool, {
        sourceId,
        ids,
        since: optionalDate(req.since),
        until,
        includeProcessed: req.includeProcessed,
      });
      if (requeued > 0) options.onRequeued?.(sourceId);
      return { requeued: BigInt(requeued) };
    },

    async testSourceTransform(req) {
      const draft = req.source;
      if (!draft) throw invalidArgument("source", "is required");
      const { sourceId, settings } = await settingsOf("source.id", draft.id);
      const draftTransform = draft.webhook?.transform ?? "";
      const transform =
        draftTransform.trim() !== ""
          ? await validateHookTransform("source.webhook.transform", draftTransform, sandboxes)
          : settings.transform;
      const draftVerifier = draft.webhook?.verifier ?? HookVerifier.UNSPECIFIED;
      const verifier = draftVerifier === HookVerifier.UNSPECIFIED ? settings.verifier : HookVerifier[draftVerifier].toLowerCase();
      const ids = requestIds(req.requestIds);
      if (req.sampleSize < 0) throw invalidArgument("sampleSize", "must not be negative");
      const rows =
        ids.length > 0
          ? await selectHookRequestsById(pool, sourceId, ids)
          : await selectRecentHookRequests(pool, sourceId, Math.min(req.sampleSize || 20, maxSample));
      // A sandbox of its own, freed after: a draft never runs in the source's.
      const sandboxKey = `test:${randomUUID()}`;
      try {
        const requests = [];
        for (const row of rows) {
          const made = await callsOfHookRequest(row, { verifier, transform }, sandboxKey, options);
          requests.push(
            create(TestedHookRequestSchema, {
              requestId: row.id,
              error: made.ok ? "" : made.error,
              calls: made.ok
                ? made.calls.map((call, i) =>
                    create(ProducedCallSchema, {
                      messageId: call.messageId,
                      type: call.type,
                      json: JSON.stringify({ ...(made.raw[i] as object), messageId: call.messageId }),
                    }),
                  )
                : [],
            }),
          );
        }
        return { requests };
      } finally {
        sandboxes.forget(sandboxKey);
      }
    },
  };
}

function statusFromProto(status: HookRequestStatus): StoredStatus | undefined {
  switch (status) {
    case HookRequestStatus.UNSPECIFIED:
      return undefined;
    case HookRequestStatus.PENDING:
      return "pending";
    case HookRequestStatus.PROCESSED:
      return "processed";
    case HookRequestStatus.FAILED:
      return "failed";
    case HookRequestStatus.DUPLICATE:
      return "duplicate";
    default:
      throw invalidArgument("status", `unknown status ${String(status)}`);
  }
}

/** Request ids are bigint identities: digits only, so nothing else reaches the bigint[] parameter. */
function requestIds(ids: readonly string[]): string[] {
  if (ids.length > maxRequestIds) throw invalidArgument("requestIds", `at most ${maxRequestIds} at once`);
  ids.forEach((id, i) => {
    if (!/^[1-9]\d{0,17}$/.test(id)) throw invalidArgument(`requestIds[${i}]`, "must be a request id (digits)");
  });
  return [...ids];
}

function optionalDate(value: Timestamp | undefined): Date | undefined {
  return value ? timestampDate(value) : undefined;
}

/** "<received_at as Postgres prints it>|<id>": keeps microseconds, like the other keyset cursors. */
function decodeCursor(token: string): { receivedAt: string; id: string } | undefined {
  const cursor = decodePageToken(token);
  if (cursor === undefined) return undefined;
  const [receivedAt, id] = cursor.split("|");
  if (!receivedAt || !id || !/^\d+$/.test(id) || !/^\d{4}-\d{2}-\d{2} [\d:.]+[+-]\d{2}(:\d{2})?$/.test(receivedAt)) {
    throw invalidArgument("pageToken", "is not a token this server issued");
  }
  return { receivedAt, id };
}

function toProto(row: HookRequestRow): HookRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(row.headers ?? {})) headers[name] = typeof value === "string" ? value : JSON.stringify(value);
  return create(HookRequestSchema, {
    id: row.id,
    sourceId: row.source_id,
    receiveTime: timestampFromDate(row.received_at),
    status: statusToProto[row.status],
    method: row.method,
    query: row.query,
    contentType: row.content_type,
    headers,
    // Text for reading; invalid UTF-8 shows as U+FFFD.
    body: row.body.toString("utf8"),
    bodyBytes: row.body.length,
    idempotencyKey: row.idempotency_key ?? "",
    error: row.error ?? "",
    messageIds: row.message_ids,
    ...(row.processed_at ? { processTime: timestampFromDate(row.processed_at) } : {}),
    attempts: row.attempts,
  });
}
