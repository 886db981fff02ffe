import { isIP } from "node:net";

// The value parsers of src/config.ts, each refusing a bad value with one
// line naming the variable and what it accepts (no stack trace at start).

/** A setting refused at start: its message is the one line printed. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** An integer setting within [min, max]; unset or empty: the fallback. */
export function int(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/**
 * Where the job table lives. `auto` follows the database: a job table Citus
 * distributes gets the Citus driver, any other the single-Postgres one.
 * `citus` also converts a database that has the extension but not yet the
 * distributed layout, at start, after the migrations (and refuses to start
 * without the extension).
 */
export interface JobTableConfig {
  layout: "auto" | "citus";
  /** Shards per distributed table when this start converts the database. */
  shardCount: number;
}

/** WAYPOST_JOB_TABLE (auto or citus) and WAYPOST_CITUS_SHARD_COUNT. */
export function parseJobTable(env: Record<string, string | undefined>): JobTableConfig {
  const raw = env.WAYPOST_JOB_TABLE;
  if (raw !== undefined && raw !== "" && raw !== "auto" && raw !== "citus") {
    throw new ConfigError(`WAYPOST_JOB_TABLE must be auto or citus, got ${JSON.stringify(raw)}`);
  }
  return { layout: raw === "citus" ? "citus" : "auto", shardCount: int(env, "WAYPOST_CITUS_SHARD_COUNT", 32, 1, 1024) };
}

/** "true", "false", or a comma-separated list of CIDR ranges. */
export function parseAllowPrivate(raw: string | undefined): { all: boolean; cidrs: string[] } {
  if (raw === undefined || raw === "" || raw === "false") return { all: false, cidrs: [] };
  if (raw === "true") return { all: true, cidrs: [] };
  const cidrs = raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const cidr of cidrs) {
    const [address, bits] = cidr.split("/");
    const family = isIP(address ?? "");
    const max = family === 6 ? 128 : 32;
    const n = Number(bits);
    if (family === 0 || bits === undefined || !Number.isInteger(n) || n < 0 || n > max) {
      throw new ConfigError(
        `WAYPOST_ALLOW_PRIVATE_DESTINATIONS must be true, false or CIDR ranges like 10.0.0.0/8, got ${JSON.stringify(cidr)}`,
      );
    }
  }
  return { all: false, cidrs };
}

/**
 * WAYPOST_CORS_ORIGINS: unset, empty or "*" for any origin, or a comma list of
 * origins as browsers send them (scheme, host, port if not the default; no
 * path, no trailing slash), so that a typo is caught here, not by a page
 * failing to send calls.
 */
export function parseCorsOrigins(raw: string | undefined): string[] | undefined {
  if (raw === undefined || raw.trim() === "" || raw.trim() === "*") return undefined;
  const origins = raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const origin of origins) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:") || parsed.origin !== origin) {
      throw new ConfigError(
        `WAYPOST_CORS_ORIGINS must be "*" or origins like https://shop.example.com (no path or trailing slash), got ${JSON.stringify(origin)}`,
      );
    }
  }
  return origins;
}

/** A NO_PROXY entry: a host name (its subdomains too), an IP address, or every host; a port when written with one. */
export interface NoProxyEntry {
  /** Lower case, without a leading dot or "*.", brackets off an IPv6 address; "*": every host. */
  host: string;
  /** 0: any port. */
  port: number;
}

/**
 * HTTPS_PROXY and HTTP_PROXY as curl and Node read them: the lower-case name
 * first, an empty value as unset, a URL without a scheme as http://. Only
 * http:// and https:// proxies (the CONNECT kind) are accepted.
 */
export function parseProxyUrl(env: Record<string, string | undefined>, lower: string, upper: string): string | undefined {
  const name = env[lower]?.trim() ? lower : upper;
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new ConfigError(`${name} must be a proxy URL like http://proxy.internal:3128, got ${JSON.stringify(redactUserinfo(raw))}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`${name} must be an http:// or https:// proxy (one that takes CONNECT), got a ${url.protocol} URL`);
  }
  if (url.pathname !== "/" || url.search || url.hash) {
    throw new ConfigError(`${name} must be a proxy's address with no path, got ${JSON.stringify(redactUserinfo(raw))}`);
  }
  return url.href.replace(/\/$/, "");
}

/** A proxy URL may carry a password: error messages show the rest only. */
function redactUserinfo(raw: string): string {
  return raw.replace(/\/\/[^/@]*@/, "//…@");
}

/**
 * NO_PROXY (or no_proxy, read first) as curl and Node read it: entries
 * separated by commas or spaces; "*" alone means every host; a leading "."
 * or "*." is dropped, and an entry matches its host and every subdomain;
 * "host:port" matches that port only; "[::1]" is the IPv6 address.
 */
export function parseNoProxy(env: Record<string, string | undefined>): NoProxyEntry[] {
  const raw = env.no_proxy?.trim() ? env.no_proxy : env.NO_PROXY;
  const entries: NoProxyEntry[] = [];
  for (const token of (raw ?? "").split(/[,\s]+/)) {
    if (!token) continue;
    if (token === "*") return [{ host: "*", port: 0 }];
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(token);
    const withPort = bracketed ? undefined : /^([^:]+):(\d+)$/.exec(token);
    const host = (bracketed?.[1] ?? withPort?.[1] ?? token).replace(/^\*?\./, "").toLowerCase();
    const port = Number(bracketed?.[2] ?? withPort?.[2] ?? 0);
    if (!host || port > 65535) {
      throw new ConfigError(`NO_PROXY entries must be host names, addresses or host:port, got ${JSON.stringify(token)}`);
    }
    entries.push({ host, port });
  }
  return entries;
}

/**
 * The certificates of NODE_EXTRA_CA_CERTS's file (PEM). Node reads the same
 * file at start for its default TLS context; Waypost reads it again because
 * a client given CAs of its own would otherwise lose them. Unlike Node,
 * which only warns, a file that cannot be read stops the start.
 */
export function readExtraCaCerts(env: Record<string, string | undefined>, read: (file: string) => string): string | undefined {
  const file = env.NODE_EXTRA_CA_CERTS?.trim();
  if (!file) return undefined;
  let text: string;
  try {
    text = read(file);
  } catch (error) {
    throw new ConfigError(`NODE_EXTRA_CA_CERTS names ${JSON.stringify(file)}, which cannot be read: ${(error as Error).message}`);
  }
  const certificates = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (!certificates) throw new ConfigError(`NODE_EXTRA_CA_CERTS names ${JSON.stringify(file)}, which holds no PEM certificate`);
  return `${certificates.join("\n")}\n`;
}

/** WAYPOST_CALL_LOG: `on` (the default) or `off`. */
export function parseCallLog(raw: string | undefined): boolean {
  const value = raw?.trim().toLowerCase() ?? "";
  if (value === "off") return false;
  if (value === "" || value === "on") return true;
  throw new ConfigError(`WAYPOST_CALL_LOG must be on or off, got ${JSON.stringify(raw)}`);
}

/** Tracing from the OpenTelemetry variables: the traces URL (undefined: off) and the OTLP/HTTP encoding. */
export function parseTracing(env: Record<string, string | undefined>): {
  tracesUrl: string | undefined;
  protocol: "http/protobuf" | "http/json";
} {
  return { tracesUrl: parseTracesUrl(env), protocol: parseOtlpProtocol(env) };
}

/** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL; grpc is not offered. */
function parseOtlpProtocol(env: Record<string, string | undefined>): "http/protobuf" | "http/json" {
  const name = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const value = env[name]?.trim() || "http/protobuf";
  if (value !== "http/protobuf" && value !== "http/json") {
    throw new ConfigError(`${name} must be http/protobuf or http/json (grpc is not supported), got ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * The traces URL as the OpenTelemetry specification derives it: the
 * signal-specific variable as it is, else the base endpoint with
 * v1/traces appended. OTEL_SDK_DISABLED=true turns tracing off.
 */
function parseTracesUrl(env: Record<string, string | undefined>): string | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const name = specific ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT";
  const value = specific || base;
  if (!value) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${name} must be an http:// or https:// URL, got ${JSON.stringify(value)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`${name} must be an http:// or https:// URL, got ${JSON.stringify(value)}`);
  }
  if (specific) return url.href;
  return `${url.href.replace(/(?<!\/)\/+$/, "")}/v1/traces`;
}
