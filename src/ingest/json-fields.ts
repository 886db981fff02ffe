import type { JsonObject } from "@bufbuild/protobuf";

/**
 * Readers for the fields of a flat JSON message (the tracking API's `/v1`
 * format, which a webhook source's transform returns too). Each returns the
 * internal representation (empty string or undefined for "absent") or throws
 * a FieldProblem naming the field. JSON `null` counts as absent everywhere:
 * several SDKs serialise unset optional fields as null.
 */
export class FieldProblem {
  // Deliberately not an Error: a batch may hold thousands of bad messages,
  // and an Error captures a stack trace each time, which made one cheap
  // request cost a second of CPU. It is thrown and caught inside parsing only.
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {}
}

export type Fields = Record<string, unknown>;

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * An identifier (userId, anonymousId, groupId, previousId). Numbers are
 * accepted and turned into their decimal string, as the hosted tracking API
 * does: programs that pass a numeric database id keep working.
 */
export function readId(fields: Fields, key: string): string {
  const value = fields[key];
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(value);
  throw new FieldProblem(key, `${key} must be a string (or a number), not ${describe(value)}`);
}

/** A plain string field (messageId, event, name, category). */
export function readString(fields: Fields, key: string): string {
  const value = fields[key];
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  throw new FieldProblem(key, `${key} must be a string, not ${describe(value)}`);
}

/** context, integrations, properties, traits: a JSON object, forwarded as given. */
export function readObject(fields: Fields, key: string): JsonObject | undefined {
  const value = fields[key];
  if (value === undefined || value === null) return undefined;
  if (isPlainObject(value)) return value as JsonObject;
  throw new FieldProblem(key, `${key} must be a JSON object, not ${describe(value)}`);
}

/** `timestamp`: an ISO 8601 string, or absent (the receive time is used). */
export function readTimestamp(fields: Fields, key: string): Date | undefined {
  const value = fields[key];
  if (value === undefined || value === null || value === "") return undefined;
  const date = typeof value === "string" ? parseIsoTimestamp(value) : undefined;
  if (!date) {
    throw new FieldProblem(
      key,
      `${key} must be an ISO 8601 date string such as "2026-11-22T10:04:05.123Z"${typeof value === "string" ? "" : `, not ${describe(value)}`}`,
    );
  }
  return date;
}

/**
 * The client's send time (`sentAt`, which the SDKs put on each message or on
 * the batch). Kept when it is an ISO 8601 date; anything else is ignored, as
 * it always was: it is the client's clock, and never a reason to refuse a call.
 */
export function readSentAt(fields: Fields): Date | undefined {
  const value = fields.sentAt;
  const date = typeof value === "string" ? parseIsoTimestamp(value) : undefined;
  // Postgres's timestamptz has no year 0.
  return date && date.getUTCFullYear() >= 1 && date.getUTCFullYear() <= 9999 ? date : undefined;
}

/** Names a JSON value's type without echoing it (it may be huge or sensitive). */
function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "boolean") return "a boolean";
  if (typeof value === "number") return "a number";
  return "a string";
}

// Date, optional time (with optional seconds and fraction), optional zone.
const isoPattern =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$/;

/**
 * Parses ISO 8601 / RFC 3339 strictly. Date.parse is not used because V8
 * accepts impossible dates ("2026-02-30" becomes March 2) and reads zone-less
 * times as local time. A time without a zone is read as UTC, the only reading
 * that does not depend on where the server runs; a date alone is midnight UTC.
 */
export function parseIsoTimestamp(text: string): Date | undefined {
  if (text.length > 64) return undefined;
  const match = isoPattern.exec(text);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(match[i] ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const millis = Number((match[7] ?? "").padEnd(3, "0").slice(0, 3));
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const offsetHours = Number(match[10] ?? 0);
  const offsetMinutes = Number(match[11] ?? 0);
  if (offsetHours > 23 || offsetMinutes > 59) return undefined;
  const sign = match[9] === "-" ? -1 : 1;
  const utc = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0-99 to 1900-1999.
  utc.setUTCFullYear(year, month - 1, day);
  utc.setUTCHours(hour, minute, second, millis);
  return new Date(utc.getTime() - sign * (offsetHours * 60 + offsetMinutes) * 60_000);
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}
