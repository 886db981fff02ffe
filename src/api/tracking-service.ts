import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { TrackingService } from "../../gen/waypost/v1/tracking_pb.js";
import type { Call, CallType } from "../calls/call.js";
import { callFromBatchMessage, callFromProto } from "./call-from-proto.js";
import type { Ingestor } from "../ingest/ingestor.js";
import { limits } from "../ingest/limits.js";
import { sourceKey } from "./auth.js";
import { invalidArgument } from "./errors.js";
import { requestSpanKey } from "./request-span.js";

export interface TrackingServiceOptions {
  ingestor: Ingestor;
}

/** TrackingService: Batch plus one unary RPC per call type. */
export function createTrackingService(options: TrackingServiceOptions): ServiceImpl<typeof TrackingService> {
  const { ingestor } = options;
  const one = (type: CallType, message: Parameters<typeof callFromProto>[1] | undefined, ctx: HandlerContext) =>
    ingestOne(ingestor, type, message && callFromProto(type, message), ctx);
  return {
    batch: (req, ctx) => ingestBatch(ingestor, req.batch.map(callFromBatchMessage), ctx),
    identify: (req, ctx) => one("identify", req.identify, ctx),
    track: (req, ctx) => one("track", req.track, ctx),
    page: (req, ctx) => one("page", req.page, ctx),
    screen: (req, ctx) => one("screen", req.screen, ctx),
    group: (req, ctx) => one("group", req.group, ctx),
    alias: (req, ctx) => one("alias", req.alias, ctx),
  };
}

/** A unary call (undefined when the request did not carry it), as TrackingService answers it. */
export async function ingestOne(ingestor: Ingestor, type: CallType, call: Call | undefined, ctx: HandlerContext) {
  if (!call) throw invalidArgument(type, `the request must carry the call in a field named "${type}"`);
  const result = await ingestTraced(ingestor, [call], ctx);
  const rejected = result.rejected[0];
  if (rejected) throw invalidArgument(`${type}.${rejected.field}`, rejected.reason);
  return { messageId: result.messageIds[0] ?? "" };
}

/** A batch's calls (undefined for an entry without a call type), as TrackingService.Batch answers them. */
export async function ingestBatch(ingestor: Ingestor, calls: ReadonlyArray<Call | undefined>, ctx: HandlerContext) {
  if (calls.length > limits.maxBatchMessages) {
    throw invalidArgument(
      "batch",
      `has ${calls.length} messages, over the limit of ${limits.maxBatchMessages} per request: send them in several batches`,
    );
  }
  const present = calls.flatMap((call, index) => (call ? [{ call, index }] : []));
  const result = await ingestTraced(
    ingestor,
    present.map((p) => p.call),
    ctx,
  );
  const messageIds: string[] = calls.map(() => "");
  present.forEach((p, i) => {
    messageIds[p.index] = result.messageIds[i] ?? "";
  });
  const rejected = [
    ...calls.flatMap((call, index) =>
      call ? [] : [{ index, reason: "message has no call type: set one of identify, track, page, screen, group, alias" }],
    ),
    ...result.rejected.map((r) => ({ index: present[r.index]!.index, reason: r.reason })),
  ].sort((a, b) => a.index - b.index);
  // Listing every rejection would turn a small request into a large answer.
  return {
    accepted: result.accepted,
    rejected: rejected.slice(0, limits.maxListedRejections),
    rejectedCount: rejected.length,
    messageIds,
  };
}

/** Ingests with the request's trace context, and puts the outcome on its span. */
async function ingestTraced(ingestor: Ingestor, calls: readonly Call[], ctx: HandlerContext) {
  const source = sourceOf(ctx);
  const span = ctx.values.get(requestSpanKey);
  const result = await ingestor.ingest(source, calls, { trace: span?.stored });
  span?.set({
    "waypost.source.id": source,
    "waypost.calls.accepted": result.accepted,
    "waypost.calls.rejected": result.rejected.length,
  });
  return result;
}

function sourceOf(ctx: HandlerContext): string {
  const source = ctx.values.get(sourceKey);
  // The auth interceptor always sets it for this service; this guards wiring mistakes.
  if (!source) throw new ConnectError("no authenticated source", Code.Internal);
  return source.id;
}
