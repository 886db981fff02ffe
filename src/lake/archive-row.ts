import { type LakeType, type LakeValue, utcTimestamp } from "./lake-types.js";
import { isIsoTimestamp } from "../warehouse/column-types.js";

/** The archive table: every call whole, whatever its type, for replays and for what the layout does not keep. */
export const archiveTable = "calls";

/** The archive's columns, fixed (they are not in the column registry). */
export const archiveColumns: ReadonlyMap<string, LakeType> = new Map<string, LakeType>([
  ["message_id", "text"],
  ["source_id", "text"],
  ["type", "text"],
  ["received_at", "timestamp"],
  ["user_id", "text"],
  ["anonymous_id", "text"],
  ["call", "json"],
]);

const text = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);

/** A call's archive row; `call` is the stored body as it is (JSON text), not re-serialised. */
export function archiveRow(
  body: Record<string, unknown>,
  call: { payload: string; receivedAt: Date; sourceId?: string | undefined },
): Map<string, LakeValue | null> {
  const receivedAt = call.receivedAt.toISOString();
  return new Map<string, LakeValue | null>([
    ["message_id", text(body.messageId)],
    ["source_id", call.sourceId ?? null],
    ["type", text(body.type)],
    ["received_at", isIsoTimestamp(receivedAt) ? utcTimestamp(receivedAt) : null],
    // Alias bodies carry their ids with spaces (the webhook body's shape), as the layout reads them.
    ["user_id", text(body.userId) ?? text(body["User ID"])],
    ["anonymous_id", text(body.anonymousId)],
    ["call", call.payload],
  ]);
}
