/** The column types the warehouse layout uses. */
export type ColumnType = "bigint" | "double precision" | "boolean" | "timestamptz" | "text" | "jsonb";

// ISO 8601 date-times as clients send them (date, time, optional fraction, a zone).
const isoTimestamp = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)$/;

export function isIsoTimestamp(value: string): boolean {
  return isoTimestamp.test(value) && !Number.isNaN(Date.parse(value));
}

/** The type a column gets from the first value seen in it. */
export function inferType(value: unknown): ColumnType {
  if (typeof value === "number") return Number.isSafeInteger(value) ? "bigint" : "double precision";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "string") return isIsoTimestamp(value) ? "timestamptz" : "text";
  return "jsonb";
}

/** A value as a statement parameter, or `mismatch` when it does not fit the column (it is then stored as NULL and counted). */
export type Coerced = { ok: true; value: string | null } | { ok: false };

const mismatch: Coerced = { ok: false };

/**
 * The text form of a value for a column of this type. Wider values fit
 * narrower columns only where nothing is lost: an integer fits a double
 * column, anything scalar fits text, anything fits jsonb; a fraction does
 * not fit bigint, and a word does not fit a timestamp.
 */
export function coerce(value: unknown, type: ColumnType): Coerced {
  if (value === null || value === undefined) return { ok: true, value: null };
  switch (type) {
    case "bigint":
      return typeof value === "number" && Number.isSafeInteger(value) ? { ok: true, value: String(value) } : mismatch;
    case "double precision":
      return typeof value === "number" && Number.isFinite(value) ? { ok: true, value: String(value) } : mismatch;
    case "boolean":
      return typeof value === "boolean" ? { ok: true, value: String(value) } : mismatch;
    case "timestamptz":
      return typeof value === "string" && isIsoTimestamp(value) ? { ok: true, value } : mismatch;
    case "text": {
      const text = typeof value === "string" ? value : JSON.stringify(value);
      // Postgres text cannot hold NUL.
      return text.includes("\u0000") ? mismatch : { ok: true, value: text };
    }
    case "jsonb": {
      const json = JSON.stringify(value);
      return json.includes("\\u0000") ? mismatch : { ok: true, value: json };
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
