/** What happened to a call at one destination (docs/routing.md#fates). */
export type Fate =
  | "pending"
  | "retrying"
  | "delivered"
  | "failed"
  | "expired"
  | "cancelled"
  | "filtered"
  | "not_connected"
  | "disabled"
  | "integrations_off"
  | "created_later";

export interface FateInput {
  /** The call's delivery at the destination, if it got one. */
  delivery?: {
    id: string;
    status: Exclude<Fate, "filtered" | "not_connected" | "disabled" | "integrations_off" | "created_later">;
    attemptCount: number;
  };
  /** What was recorded when the call was routed (or its transform dropped it). */
  recorded: { fate: "filtered" | "disabled" | "integrations_off"; reason: string | null } | null;
  destinationCreatedAt: Date;
  callReceivedAt: Date;
  /** Connected to the call's source now. */
  connected: boolean;
}

export interface ExplainedFate {
  fate: Fate;
  reason: string;
  deliveryId: string;
  attemptCount: number;
}

/**
 * A call's fate at a destination: its delivery's state; else the reason
 * recorded when the call was routed (never recomputed from today's
 * settings); else, for a destination connected to the call's source now,
 * it did not exist yet; else it was not connected to the call's source
 * (one created later and never connected to that source is not connected:
 * its age is not why the call missed it).
 * A transform that dropped the call leaves a cancelled delivery and a
 * recorded reason: the reason wins, so the drop does not read as a cancel.
 */
export function explainFate(input: FateInput): ExplainedFate {
  const { delivery, recorded } = input;
  const droppedByTransform = recorded?.fate === "filtered" && recorded.reason === "transform";
  if (delivery && !(droppedByTransform && delivery.status === "cancelled")) {
    return { fate: delivery.status, reason: "", deliveryId: delivery.id, attemptCount: delivery.attemptCount };
  }
  const fromDelivery = { deliveryId: delivery?.id ?? "", attemptCount: delivery?.attemptCount ?? 0 };
  if (recorded) return { fate: recorded.fate, reason: recorded.reason ?? "", ...fromDelivery };
  if (input.connected && input.destinationCreatedAt.getTime() > input.callReceivedAt.getTime())
    return { fate: "created_later", reason: "", ...fromDelivery };
  return { fate: "not_connected", reason: "", ...fromDelivery };
}
