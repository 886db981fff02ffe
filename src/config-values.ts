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
