import { type ColumnType, isIsoTimestamp, Misfit } from "../warehouse/column-types.js";

/** The column types of a lake file (see docs/lakes.md for each one's Parquet type). */
export type LakeType = "bigint" | "double" | "boolean" | "timestamp" | "text" | "json";

export const lakeTypes: readonly LakeType[] = ["bigint", "double", "boolean", "timestamp", "text", "json"];

/** A value as it goes into a file: timestamps as canonical UTC ISO text, json as JSON text. */
export type LakeValue = number | boolean | string;

/** The lake type of a warehouse column type: the same six kinds under names that are not Postgres's. */
export function lakeTypeOf(type: ColumnType): LakeType {
  switch (type) {
    case "double precision":
      return "double";
    case "timestamptz":
      return "timestamp";
    case "jsonb":
      return "json";
    default:
      return type;
  }
}

const misfits = new Map<LakeType, Misfit>(lakeTypes.map((t) => [t, new Misfit(`does not fit the ${t} column`)]));

/**
 * A value for a column of this type, or the Misfit saying why it does not fit
 * (it is then written as null and counted). As in the warehouse, a value fits
 * a wider column where nothing is lost: an integer a double column, any
 * scalar a text column, anything a json column; a fraction does not fit
 * bigint and a word (or an impossible date) does not fit a timestamp.
 */
export function fitLakeValue(value: unknown, type: LakeType): LakeValue | null | Misfit {
  if (value === null || value === undefined) return null;
  switch (type) {
    case "bigint":
      return typeof value === "number" && Number.isSafeInteger(value) ? value : misfits.get(type)!;
    case "double":
      return typeof value === "number" && Number.isFinite(value) ? value : misfits.get(type)!;
    case "boolean":
      return typeof value === "boolean" ? value : misfits.get(type)!;
    case "timestamp":
      return typeof value === "string" && isIsoTimestamp(value) ? utcTimestamp(value) : misfits.get(type)!;
    case "text":
      return typeof value === "string" ? value : JSON.stringify(value);
    case "json":
      return JSON.stringify(value);
  }
}

const isoParts = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+-])(\d{2})(?::?(\d{2}))?)$/;

/**
 * An ISO 8601 date-time (one isIsoTimestamp accepts) in the one form every
 * lake file holds: UTC, `YYYY-MM-DDTHH:MM:SS.ffffffZ` when it has a fraction
 * past milliseconds, else toISOString's. Files then never depend on how a
 * reader parses zone offsets, and a fraction is kept to the microsecond
 * (Parquet's TIMESTAMP unit here).
 */
export function utcTimestamp(text: string): string {
  // The form Waypost and most SDKs write is already canonical.
  if (text.length === 24 && text.charCodeAt(23) === 90 && text.charCodeAt(10) === 84) return text;
  const m = isoParts.exec(text);
  if (!m) throw new Error(`not an ISO 8601 date-time: ${JSON.stringify(text.slice(0, 40))}`);
  const date = new Date(0);
  date.setUTCFullYear(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  date.setUTCHours(Number(m[4]), Number(m[5]), Number(m[6] ?? 0), 0);
  if (m[9] !== undefined) {
    const offsetMinutes = Number(m[10]) * 60 + Number(m[11] ?? 0);
    date.setTime(date.getTime() - (m[9] === "-" ? -offsetMinutes : offsetMinutes) * 60_000);
  }
  const micros = (m[7] ?? "").padEnd(6, "0").slice(0, 6);
  const base = date.toISOString().slice(0, 19);
  return micros.endsWith("000") ? `${base}.${micros.slice(0, 3)}Z` : `${base}.${micros}Z`;
}
