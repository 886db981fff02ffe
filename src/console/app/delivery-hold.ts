import { timestampDate } from "@bufbuild/protobuf/wkt";
import { DeliveryStatus, type Delivery } from "../../../gen/waypost/v1/delivery_pb.js";
import { DestinationHealth, type Destination } from "../../../gen/waypost/v1/destination_pb.js";
import { formatTime } from "./format.js";

/**
 * Why an unfinished delivery is not being sent although it is due: its
 * destination's circuit is open (the endpoint kept failing; deliveries wait
 * for a probe to succeed), or the endpoint asked everyone to back off.
 * Undefined when nothing holds it. Without this, a held delivery shows a
 * "next attempt" in the past and nothing says why it does not happen.
 */
export function holdOf(delivery: Delivery, destination: Destination | undefined, now: Date): string | undefined {
  const open = delivery.status === DeliveryStatus.PENDING || delivery.status === DeliveryStatus.RETRYING;
  if (!open || !destination) return undefined;
  if (destination.enabled === false) return "Held: the destination is disabled.";
  if (destination.health === DestinationHealth.CIRCUIT_OPEN) {
    const probe = destination.nextProbeTime ? ` The next probe is due ${formatTime(destination.nextProbeTime)}.` : "";
    return `Held by the open circuit: the endpoint kept failing, so its deliveries wait until a probe delivery succeeds.${probe}`;
  }
  if (destination.backoffUntilTime && timestampDate(destination.backoffUntilTime) > now) {
    return `Held until ${formatTime(destination.backoffUntilTime)}: the endpoint asked to slow down (Retry-After or a run of 429 answers).`;
  }
  return undefined;
}

/** The statuses Retry accepts. */
export const retryableStatuses = new Set([DeliveryStatus.FAILED, DeliveryStatus.EXPIRED, DeliveryStatus.RETRYING]);

/**
 * What Retry would do, or why it cannot: shown beside the button, so a
 * disabled button is never unexplained. A warehouse destination loads rows
 * rather than sending requests, and says so.
 */
/** What a retry does, as the destination's kind says it (its client file in kinds/). */
export interface RetryWording {
  /** "Sends it" */
  now: string;
  /** "Sends it again now to every webhook" */
  again: string;
}

const webhookWording: RetryWording = { now: "Sends it", again: "Sends it again now to every webhook" };

export function retryHint(delivery: Delivery, held: boolean, wording: RetryWording = webhookWording): string {
  const send = wording.now;
  switch (delivery.status) {
    case DeliveryStatus.DELIVERED:
      return "Delivered: there is nothing to retry.";
    case DeliveryStatus.PENDING:
      return "Not attempted yet: it goes out when due, so there is nothing to retry.";
    case DeliveryStatus.CANCELLED:
      return "Cancelled (its destination was disabled or deleted): it cannot be retried.";
    case DeliveryStatus.RETRYING:
      return held
        ? "Retry makes it due now, with a fresh retry window; what holds it still applies."
        : `${send} now rather than at its next attempt, with a fresh retry window.`;
    default:
      return `${wording.again}, with a fresh retry window.`;
  }
}
