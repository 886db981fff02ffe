/** The column types the warehouse layout uses. */
export type ColumnType = "bigint" | "double precision" | "boolean" | "timestamptz" | "text" | "jsonb";

// ISO 8601 date-times as clients send them (date, time, optional fraction, a zone).
const isoTimestamp = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-](\d{2})(?::?(\d{2}))?)$/;

/**
 * Whether a string is a date-time Postgres takes as timestamptz. Every part
 * is checked against the calendar, not only the shape: JavaScript's
 * Date.parse rolls `2026-02-30` over to March and takes year `0000`, both of
 * which Postgres refuses (and one refused value would fail its whole batch).
 */
export function isIsoTimestamp(value: string): boolean {
  const m = isoTimestamp.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const second = m[6] === undefined ? 0 : Number(m[6]);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return false;
  if (hour > 23 || minute > 59 || second > 59) return false;
  // Postgres takes zone offsets up to 15:59.
  return m[9] === undefined || (Number(m[9]) <= 15 && (m[10] === undefined || Number(m[10]) <= 59));
}

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** The type a column gets from the first value seen in it. */
export function inferType(value: unknown): ColumnType {
  if (typeof value === "number") return Number.isSafeInteger(value) ? "bigint" : "double precision";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "string") return isIsoTimestamp(value) ? "timestamptz" : "text";
  return "jsonb";
}

/** A value as a statement parameter, or why it does not fit the column (it is then stored as NULL and kept as a discard). */
export type Coerced = { ok: true; value: string | null } | { ok: false; reason: string };

const noFit = (type: ColumnType): Coerced => ({ ok: false, reason: `does not fit the ${type} column` });
const hasNul: Coerced = { ok: false, reason: "contains a NUL character, which Postgres text cannot hold" };

/**
 * The text form of a value for a column of this type. Wider values fit
 * narrower columns only where nothing is lost: an integer fits a double
 * column, anything scalar fits text, anything fits jsonb; a fraction does
 * not fit bigint, and a word (or an impossible date) does not fit a timestamp.
 */
export function coerce(value: unknown, type: ColumnType): Coerced {
  if (value === null || value === undefined) return { ok: true, value: null };
  switch (type) {
    case "bigint":
      return typeof value === "number" && Number.isSafeInteger(value) ? { ok: true, value: String(value) } : noFit(type);
    case "double precision":
      return typeof value === "number" && Number.isFinite(value) ? { ok: true, value: String(value) } : noFit(type);
    case "boolean":
      return typeof value === "boolean" ? { ok: true, value: String(value) } : noFit(type);
    case "timestamptz":
      if (typeof value !== "string") return noFit(type);
      return isIsoTimestamp(value) ? { ok: true, value } : { ok: false, reason: "is not a valid date-time for the timestamptz column" };
    case "text": {
      const text = typeof value === "string" ? value : JSON.stringify(value);
      return text.includes("\u0000") ? hasNul : { ok: true, value: text };
    }
    case "jsonb": {
      const json = JSON.stringify(value);
      return json.includes("\\u0000") ? hasNul : { ok: true, value: json };
    }
  }
}

/** Maps information_schema's data_type to the layout's types (anything else is treated as text). */
export function columnTypeOf(dataType: string): ColumnType {
  switch (dataType) {
    case "bigint":
    case "integer":
    case "smallint":
      return "bigint";
    case "double precision":
    case "real":
    case "numeric":
      return "double precision";
    case "boolean":
      return "boolean";
    case "timestamp with time zone":
    case "timestamp without time zone":
      return "timestamptz";
    case "jsonb":
    case "json":
      return "jsonb";
    default:
      return "text";
  }
}
