import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { DeliveryStatus, type ListDeliveriesRequestSchema } from "../../../gen/waypost/v1/delivery_pb.js";

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
  const filter = {} as DeliveryFilter;
  for (const key of keys) filter[key] = query[key] ?? "";
  return filter;
}

export function filterToQuery(filter: DeliveryFilter): string {
  const params = new URLSearchParams();
  for (const key of keys) if (filter[key].trim() !== "") params.set(key, filter[key].trim());
  const text = params.toString();
  return text ? `?${text}` : "";
}

function time(value: string) {
  if (value === "") return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : timestampFromDate(date);
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
    since: time(filter.since),
    until: time(filter.until),
  };
}
