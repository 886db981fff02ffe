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
  // Most strings a call carries are no date-time: the shortest one is `2026-11-22T10:04Z`, with `-` at 4 and 7.
  if (value.length < 17 || value.charCodeAt(4) !== 45 || value.charCodeAt(7) !== 45) return false;
  // The form Waypost itself writes (toISOString), checked without a regex or an allocation.
  if (value.length === 24 && value.charCodeAt(23) === 90 && value.charCodeAt(19) === 46) {
    const parts = canonicalParts(value);
    if (parts !== undefined) return parts;
  }
  const m = isoTimestamp.exec(value);
  if (!m) return false;
  const second = m[6] === undefined ? 0 : Number(m[6]);
  if (!validDateTime(Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]), second)) return false;
  // Postgres takes zone offsets up to 15:59.
  return m[9] === undefined || (Number(m[9]) <= 15 && (m[10] === undefined || Number(m[10]) <= 59));
}

/** `YYYY-MM-DDTHH:MM:SS.sssZ`: whether it is a valid date-time; undefined when it is not of that shape. */
function canonicalParts(v: string): boolean | undefined {
  const at = (i: number) => {
    const digit = v.charCodeAt(i) - 48;
    return digit >= 0 && digit <= 9 ? digit : Number.NaN;
  };
  if (v.charCodeAt(10) !== 84 || v.charCodeAt(13) !== 58 || v.charCodeAt(16) !== 58) return undefined;
  const year = at(0) * 1000 + at(1) * 100 + at(2) * 10 + at(3);
  const month = at(5) * 10 + at(6);
  const day = at(8) * 10 + at(9);
  const hour = at(11) * 10 + at(12);
  const minute = at(14) * 10 + at(15);
  const second = at(17) * 10 + at(18);
  const fraction = at(20) + at(21) + at(22);
  if (Number.isNaN(year + month + day + hour + minute + second + fraction)) return undefined;
  return validDateTime(year, month, day, hour, minute, second);
}

function validDateTime(year: number, month: number, day: number, hour: number, minute: number, second: number): boolean {
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return false;
  return hour <= 23 && minute <= 59 && second <= 59;
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

/** Why a value does not fit its column (one object per reason, shared: a batch's cells allocate nothing for it). */
export class Misfit {
  constructor(readonly reason: string) {}
}

const noFit = new Map<ColumnType, Misfit>(
  (["bigint", "double precision", "boolean", "timestamptz", "text", "jsonb"] as const).map((t) => [
    t,
    new Misfit(`does not fit the ${t} column`),
  ]),
);
const hasNul = new Misfit("contains a NUL character, which Postgres text cannot hold");
const notDateTime = new Misfit("is not a valid date-time for the timestamptz column");

/**
 * The text form of a value for a column of this type. Wider values fit
 * narrower columns only where nothing is lost: an integer fits a double
 * column, anything scalar fits text, anything fits jsonb; a fraction does
 * not fit bigint, and a word (or an impossible date) does not fit a timestamp.
 */
export function coerce(value: unknown, type: ColumnType): Coerced {
  const fitted = fitToColumn(value, type);
  return fitted instanceof Misfit ? { ok: false, reason: fitted.reason } : { ok: true, value: fitted };
}

/** coerce() without a result object per value: the parameter, or the Misfit saying why not. */
export function fitToColumn(value: unknown, type: ColumnType): string | null | Misfit {
  if (value === null || value === undefined) return null;
  switch (type) {
    case "bigint":
      return typeof value === "number" && Number.isSafeInteger(value) ? String(value) : noFit.get(type)!;
    case "double precision":
      return typeof value === "number" && Number.isFinite(value) ? String(value) : noFit.get(type)!;
    case "boolean":
      return typeof value === "boolean" ? String(value) : noFit.get(type)!;
    case "timestamptz":
      if (typeof value !== "string") return noFit.get(type)!;
      return isIsoTimestamp(value) ? value : notDateTime;
    case "text": {
      const text = typeof value === "string" ? value : JSON.stringify(value);
      return text.includes("\u0000") ? hasNul : text;
    }
    case "jsonb": {
      const json = JSON.stringify(value);
      return json.includes("\\u0000") ? hasNul : json;
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
