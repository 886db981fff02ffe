import { isIP } from "node:net";
import { InvalidInputError } from "../../errors.js";
import type { AddressGuard } from "../../outbound/address-guard.js";

/**
 * A broker host named literally (an IP, localhost) that the address guard
 * refuses can only fail at delivery: the reason, to refuse it when it is
 * saved; undefined for names, which are judged on what they resolve to.
 */
export function refuseLiteralHost(hostname: string, guard: AddressGuard): string | undefined {
  const host = hostname.replace(/^\[(.*)\]$/, "$1");
  const lower = host.toLowerCase().replace(/\.$/, "");
  if (lower === "localhost" || lower.endsWith(".localhost")) {
    return guard.refuse("127.0.0.1") && `host ${hostname} is loopback; allow it with WAYPOST_ALLOW_PRIVATE_DESTINATIONS`;
  }
  return isIP(host) === 0 ? undefined : guard.refuse(host);
}

export { guardedLookup, RefusedBrokerAddressError } from "../../outbound/guarded-lookup.js";

/** What a response shows in place of a password or token. */
export const maskedSecret = "***";

/** The URL with its password (if any) replaced by `***`: `amqp://user:***@host/vhost`. */
export function maskUrlPassword(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "";
  }
  if (url.password === "") return url.href;
  url.password = maskedSecret;
  return url.href;
}

/** Replaces every occurrence of a secret in a message (errors from clients may echo what they were given). */
export function redact(message: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = message;
  for (const secret of secrets) if (secret && secret.length >= 3) out = out.split(secret).join(maskedSecret);
  return out;
}

/** How a broker's URLs are written: its two schemes (plain and TLS), the longest allowed, what to say of text that is no URL. */
export interface BrokerUrlRule {
  schemes: readonly [string, string];
  maxLength: number;
  /** The message for text that does not parse (never echoing a password). */
  notUrl: string;
}

/**
 * A broker URL from a request, checked as far as every broker's is: given,
 * bounded, absolute, of one of the broker's schemes and with a host
 * (InvalidInputError naming the field). The broker checks the rest.
 */
export function parseBrokerUrl(field: string, raw: string, rule: BrokerUrlRule): URL {
  if (raw === "") throw new InvalidInputError(field, "is required");
  if (raw.length > rule.maxLength) throw new InvalidInputError(field, `is longer than ${rule.maxLength} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidInputError(field, rule.notUrl);
  }
  if (!rule.schemes.some((scheme) => url.protocol === `${scheme}:`)) {
    const got = JSON.stringify(url.protocol.replace(/:$/, "").slice(0, 20));
    throw new InvalidInputError(field, `must use ${rule.schemes.join(" or ")}, got ${got}`);
  }
  if (url.hostname === "") throw new InvalidInputError(field, "has no host");
  return url;
}
