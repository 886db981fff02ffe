/** The schema a warehouse destination writes to when none is given. */
export const defaultWarehouseSchema = "waypost";

/** What is wrong with a warehouse URL, or undefined when it is usable. */
export function postgresUrlProblem(url: string): string | undefined {
  if (url === "") return "is required for a Postgres destination";
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "must be a postgres:// URL";
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") return "must be a postgres:// or postgresql:// URL";
  if (parsed.hostname === "") return "must name a host";
  if (parsed.pathname.length <= 1) return "must name a database (postgres://user:password@host:5432/database)";
  return undefined;
}

/** What is wrong with a schema name, or undefined. Plain lowercase identifiers only, so the schema is what the operator typed. */
export function schemaProblem(schema: string): string | undefined {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) return "must be a lowercase Postgres identifier (letters, digits, _; not starting with a digit)";
  if (Buffer.byteLength(schema) > 63) return "must be at most 63 bytes";
  if (schema.startsWith("pg_") || schema === "information_schema") return "is reserved by Postgres";
  return undefined;
}

/** The URL with its password masked: what responses, attempts and logs show. */
export function maskPostgresUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "****";
    return parsed.toString();
  } catch {
    return "postgres://(unparseable)";
  }
}
