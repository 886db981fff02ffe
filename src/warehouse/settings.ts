/** The schema a warehouse destination writes to when none is given. */
export const defaultWarehouseSchema = "waypost";

/**
 * The URL parameters a warehouse URL may carry, with the values each takes.
 * Everything else is refused when the destination is saved: above all the
 * TLS file parameters (sslrootcert, sslcert, sslkey), which the driver reads
 * synchronously from the server's disk as it connects (a FIFO or /dev/zero
 * there would stall or fill the process), and `host`, which could point at
 * a local socket.
 */
export const allowedUrlParameters: Readonly<Record<string, readonly string[] | "any">> = {
  sslmode: ["disable", "prefer", "require", "no-verify", "verify-ca", "verify-full"],
  ssl: ["true", "false", "0", "1"],
  application_name: "any",
};

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
  // A percent-encoded host name is a path to a local socket for the driver.
  if (parsed.hostname.includes("%")) return "must name a host by name or address";
  if (parsed.pathname.length <= 1) return "must name a database (postgres://user:password@host:5432/database)";
  return parameterProblem(parsed.searchParams);
}

function parameterProblem(params: URLSearchParams): string | undefined {
  const seen = new Set<string>();
  for (const [name, value] of params) {
    const allowed = allowedUrlParameters[name];
    const shown = JSON.stringify(name.slice(0, 64));
    if (!Object.hasOwn(allowedUrlParameters, name) || allowed === undefined) {
      const tls = /^ssl/i.test(name) ? "; TLS files cannot be given: use sslmode=verify-full with a certificate the system trusts" : "";
      return `parameter ${shown} is not allowed (allowed: ${Object.keys(allowedUrlParameters).join(", ")})${tls}`;
    }
    if (seen.has(name)) return `parameter ${shown} is given twice`;
    seen.add(name);
    if (allowed !== "any" && !allowed.includes(value)) return `parameter ${shown} must be one of ${allowed.join(", ")}`;
    if (value.length > 200 || /\p{Cc}/u.test(value)) return `parameter ${shown} must be at most 200 printable characters`;
  }
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
