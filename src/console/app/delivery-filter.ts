import type { MessageInitShape } from "@bufbuild/protobuf";
import { DeliveryStatus, type ListDeliveriesRequestSchema } from "../../../gen/waypost/v1/delivery_pb.js";
import { filterFromQueryOf, filterToQueryOf, timeOf } from "./query-filter.js";

/** The Deliveries filter, as it stands in the page's query string (shareable, no secrets). */
export interface DeliveryFilter {
  destination: string;
  status: string;
  messageId: string;
  userId: string;
  /** datetime-local values, in the browser's time zone. */
  since: string;
  until: string;
}

export const statusOptions: Array<[string, DeliveryStatus]> = [
  ["pending", DeliveryStatus.PENDING],
  ["retrying", DeliveryStatus.RETRYING],
  ["delivered", DeliveryStatus.DELIVERED],
  ["failed", DeliveryStatus.FAILED],
  ["expired", DeliveryStatus.EXPIRED],
  ["cancelled", DeliveryStatus.CANCELLED],
];

const keys: Array<keyof DeliveryFilter> = ["destination", "status", "messageId", "userId", "since", "until"];

export function filterFromQuery(query: Record<string, string | undefined>): DeliveryFilter {
  return filterFromQueryOf(keys, query);
}

export function filterToQuery(filter: DeliveryFilter): string {
  return filterToQueryOf(keys, filter);
}

export function statusOf(name: string): DeliveryStatus | undefined {
  return statusOptions.find(([n]) => n === name)?.[1];
}

/** The filter as ListDeliveries fields (RetryDeliveries takes the same, with statuses). */
export function filterToRequest(filter: DeliveryFilter): MessageInitShape<typeof ListDeliveriesRequestSchema> {
  const status = statusOf(filter.status);
  return {
    destinationId: filter.destination,
    ...(status !== undefined ? { status } : {}),
    messageId: filter.messageId.trim(),
    userId: filter.userId.trim(),
    since: timeOf(filter.since),
    until: timeOf(filter.until),
  };
}
