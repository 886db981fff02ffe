import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { DeliveryStatus, Fate } from "../../../gen/waypost/v1/delivery_pb.js";
import { enumWords } from "../../enum-words.js";

export function formatTime(ts: Timestamp | undefined): string {
  return ts ? formatDate(timestampDate(ts)) : "";
}

export function formatDate(date: Date): string {
  return date
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, "Z");
}

export const statusLabels = enumWords(DeliveryStatus, { [DeliveryStatus.UNSPECIFIED]: "unknown" });

/** What happened to a call at a destination (ExplainMessage, ListFates). */
export const fateLabels = enumWords(Fate, { [Fate.UNSPECIFIED]: "–" }, true);
