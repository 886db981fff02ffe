import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { DeliveryStatus, Fate } from "../../gen/waypost/v1/delivery_pb.js";
import { enumWords } from "../enum-words.js";
import { UsageError } from "./errors.js";

/** A table with a header row, columns padded to their widest cell. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return `${[line(headers), ...rows.map(line)].join("\n")}\n`;
}

/** "key: value" lines, keys aligned. */
export function fields(pairs: readonly (readonly [string, string])[]): string {
  const width = Math.max(...pairs.map(([k]) => k.length)) + 1;
  return `${pairs.map(([k, v]) => `${(`${k}:`).padEnd(width)} ${v}`).join("\n")}\n`;
}

/** A timestamp as ISO 8601 UTC to the second; "-" when absent. */
export function time(ts: Timestamp | undefined): string {
  if (!ts) return "-";
  return timestampDate(ts)
    .toISOString()
    .replace(/\.\d{3}Z$/, "Z");
}

const statusWords = enumWords(DeliveryStatus);

export function statusText(status: DeliveryStatus): string {
  return statusWords[status] ?? String(status);
}

/** What happened to a call at a destination (ExplainMessage, ListFates). */
export const fateNames = enumWords(Fate, { [Fate.UNSPECIFIED]: "-" });

const statusByName = new Map<string, DeliveryStatus>(
  Object.entries(DeliveryStatus)
    .filter((entry): entry is [string, DeliveryStatus] => typeof entry[1] === "number" && entry[1] !== 0)
    .map(([name, value]) => [name.toLowerCase(), value]),
);

/** "failed,expired" (or DELIVERY_STATUS_FAILED) -> statuses. */
export function parseStatuses(text: string, flag = "--status"): DeliveryStatus[] {
  return text
    .split(",")
    .map((part) =>
      part
        .trim()
        .toLowerCase()
        .replace(/^delivery_status_/, ""),
    )
    .filter((part) => part !== "")
    .map((name) => {
      const status = statusByName.get(name);
      if (status === undefined) {
        throw new UsageError(`${flag}: unknown status "${name}" (one of ${[...statusByName.keys()].join(", ")})`);
      }
      return status;
    });
}

const units: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * --since/--until: an ISO 8601 time (2026-11-22T10:00:00Z, or a date), or a
 * duration back from now: 30s, 15m, 2h, 7d.
 */
export function parseTime(text: string, flag: string, now = new Date()): Date {
  return parseTimeOrDuration(text, flag, now, -1, "back from now");
}

/**
 * --expires: an ISO 8601 time, or a duration ahead from now: 30d, 12h. A
 * time already past is the server's to refuse (invalid_argument).
 */
export function parseFutureTime(text: string, flag: string, now = new Date()): Date {
  return parseTimeOrDuration(text, flag, now, 1, "from now");
}

function parseTimeOrDuration(text: string, flag: string, now: Date, direction: 1 | -1, relativeWords: string): Date {
  const relative = /^(\d+)([smhd])$/.exec(text.trim());
  if (relative) return new Date(now.getTime() + direction * Number(relative[1]) * units[relative[2]!]!);
  const date = /^\d{4}-\d{2}-\d{2}/.test(text) ? new Date(text) : new Date(NaN);
  if (Number.isNaN(date.getTime())) {
    throw new UsageError(
      `${flag}: "${text}" is not a time (use ISO 8601 like 2026-11-22T10:00:00Z, or ${relativeWords}: 30s, 15m, 2h, 7d)`,
    );
  }
  return date;
}

/** A positive integer option. */
export function parseCount(text: string, flag: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1) throw new UsageError(`${flag}: "${text}" is not a positive whole number`);
  return Number(text);
}

/** A JSON object option (--properties, --traits, --context). */
export function parseJsonObject(text: string, flag: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${flag}: not JSON (${(error as Error).message})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new UsageError(`${flag}: must be a JSON object`);
  return value as Record<string, unknown>;
}

/** Repeatable options: --source a --source b. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
