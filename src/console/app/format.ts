import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { DeliveryStatus } from "../../../gen/waypost/v1/delivery_pb.js";

export function formatTime(ts: Timestamp | undefined): string {
  return ts ? formatDate(timestampDate(ts)) : "";
}

export function formatDate(date: Date): string {
  return date
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, "Z");
}

export const statusLabels: Record<DeliveryStatus, string> = {
  [DeliveryStatus.UNSPECIFIED]: "unknown",
  [DeliveryStatus.PENDING]: "pending",
  [DeliveryStatus.RETRYING]: "retrying",
  [DeliveryStatus.DELIVERED]: "delivered",
  [DeliveryStatus.FAILED]: "failed",
  [DeliveryStatus.EXPIRED]: "expired",
  [DeliveryStatus.CANCELLED]: "cancelled",
};
