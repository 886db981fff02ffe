import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ExplainMessageResponseSchema,
  Fate,
  type ExplainMessageRequest,
  type ExplainMessageResponse,
} from "../../gen/waypost/v1/delivery_pb.js";
import type { LogDeliveryReads } from "../db/job-table/index.js";
import type { Queryable } from "../db/pool.js";
import { selectMessageDeliveries } from "../db/queries/message-deliveries.js";
import { selectDestinationFates } from "../db/queries/message-fates.js";
import { selectCallsByMessageId } from "../db/queries/message-lookup.js";
import { payloadText } from "../ingest/payload.js";
import { explainFate, type Fate as FateName, type FateInput } from "../routing/fates.js";
import { requireStorableText } from "./destination-validation.js";
import { invalidArgument, notFound, requireUuid } from "./errors.js";

const fateToProto: Record<FateName, Fate> = {
  pending: Fate.PENDING,
  retrying: Fate.RETRYING,
  delivered: Fate.DELIVERED,
  failed: Fate.FAILED,
  expired: Fate.EXPIRED,
  cancelled: Fate.CANCELLED,
  filtered: Fate.FILTERED,
  not_connected: Fate.NOT_CONNECTED,
  disabled: Fate.DISABLED,
  integrations_off: Fate.INTEGRATIONS_OFF,
  created_later: Fate.CREATED_LATER,
};

/**
 * ExplainMessage: a stored call and its fate at every destination that
 * exists now. At a destination on the call log (`log` reads, where there
 * can be one) its delivery is derived from what the log recorded.
 */
export async function explainMessage(db: Queryable, req: ExplainMessageRequest, log?: LogDeliveryReads): Promise<ExplainMessageResponse> {
  if (req.messageId === "") throw invalidArgument("messageId", "is required");
  // Stored ids never hold NUL (Postgres text cannot): one here is the caller's mistake, not a failed query.
  requireStorableText("messageId", req.messageId);
  const sourceId = req.sourceId === "" ? undefined : requireUuid("sourceId", req.sourceId);
  const calls = await selectCallsByMessageId(db, req.messageId, sourceId);
  if (calls.length === 0) throw notFound("message", req.messageId);
  if (calls.length > 1) {
    throw invalidArgument(
      "sourceId",
      `several sources used messageId ${JSON.stringify(req.messageId)}: ${calls.map((c) => c.source_id).join(", ")}; name one`,
    );
  }
  const call = calls[0]!;
  const [destinations, deliveries, derived] = await Promise.all([
    selectDestinationFates(db, call.id, call.source_id),
    selectMessageDeliveries(db, call.id),
    log?.selectMessageDeliveries(db, call.id) ?? [],
  ]);
  // A row of its own (an exception) is the delivery; a derived one only where there is none.
  const byDestination = new Map([...derived, ...deliveries].map((d) => [d.destination_id, d]));
  return create(ExplainMessageResponseSchema, {
    call: {
      sourceId: call.source_id,
      messageId: call.message_id,
      type: call.type,
      event: eventOf(call.payload),
      userId: call.user_id ?? "",
      receiveTime: timestampFromDate(call.received_at),
      body: call.payload,
    },
    destinations: destinations.map((row) => {
      const delivery = byDestination.get(row.id);
      const input: FateInput = {
        delivery: delivery && { id: delivery.id, status: delivery.status, attemptCount: delivery.attempt_count },
        recorded: row.fate ? { fate: row.fate, reason: row.reason } : null,
        destinationCreatedAt: row.created_at,
        callReceivedAt: call.received_at,
        connected: row.connected,
      };
      const explained = explainFate(input);
      return {
        destinationId: row.id,
        destinationName: row.name,
        fate: fateToProto[explained.fate],
        reason: explained.reason,
        deliveryId: explained.deliveryId,
        attemptCount: explained.attemptCount,
      };
    }),
  });
}

/** A stored call's event ("" for a call without one). */
export function eventOf(payload: string): string {
  return payloadText(payload, "event");
}
