import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { type HookHeaders, hookHeader } from "./hook-headers.js";
import { type HookSettings, standardWebhooksKey } from "./hook-settings.js";

export { type HookHeaders, hookHeader } from "./hook-headers.js";
export { idempotencyKeyOf, maxIdempotencyKeyLength } from "./idempotency-key.js";

// Checks that a webhook request comes from its sender, by each sender's own
// rules, before anything of it is stored. Pure: no I/O, no clock but `now`,
// and it never throws (a misconfigured verifier must answer 401, never 500).

export interface HookRequestToVerify {
  headers: HookHeaders;
  body: Buffer;
  now: Date;
}
export type HookVerdict = { ok: true } | { ok: false; reason: string };

/** Stripe's and Standard Webhooks' replay window, either side of now. */
export const hookTimestampToleranceSeconds = 5 * 60;

const accepted: HookVerdict = { ok: true };
const rejected = (reason: string): HookVerdict => ({ ok: false, reason });

/**
 * The longest header value a verifier reads. Signatures, timestamps and
 * tokens are far shorter (a Stripe header with three signatures is about
 * 250 characters); a longer value is refused unread, so no parse of a
 * header costs more than this.
 */
export const maxVerifiedHeaderLength = 8 * 1024;

/** A header over maxVerifiedHeaderLength: the request is refused without parsing it. */
class HeaderTooLong extends Error {}

/** hookHeader, refusing a value over maxVerifiedHeaderLength. */
function verifiedHeader(headers: HookHeaders, name: string): string | undefined {
  const value = hookHeader(headers, name);
  if (value !== undefined && value.length > maxVerifiedHeaderLength) {
    throw new HeaderTooLong(`${name} header is over ${maxVerifiedHeaderLength} characters`);
  }
  return value;
}

export function verifyHookRequest(settings: HookSettings, request: HookRequestToVerify): HookVerdict {
  try {
    switch (settings.verifier) {
      case "none":
        return accepted;
      case "standard_webhooks":
        return verifyStandardWebhooks(settings.secret, request);
      case "stripe":
        return verifyStripe(settings.secret, request);
      case "github":
        return verifyDigestHeader(request, "X-Hub-Signature-256", hmac("sha256", settings.secret, request.body), "hex", "sha256=");
      case "shopify":
        return verifyDigestHeader(request, "X-Shopify-Hmac-Sha256", hmac("sha256", settings.secret, request.body), "base64", "");
      case "hmac": {
        const config = settings.hmac;
        if (!config) return rejected("the source's HMAC verifier has no header configured");
        return verifyDigestHeader(
          request,
          config.header,
          hmac(config.algorithm, settings.secret, request.body),
          config.encoding,
          config.prefix,
        );
      }
      case "basic":
        return verifyBasic(settings.secret, request.headers);
      case "token":
        return verifyToken(settings, request.headers);
      default:
        return rejected(`unknown verifier ${String(settings.verifier)}`);
    }
  } catch (error) {
    if (error instanceof HeaderTooLong) return rejected(error.message);
    // Nothing else above should throw; if something does, the sender still gets a 401.
    return rejected("the signature could not be checked");
  }
}

/**
 * What the headers alone decide, before the body is read: the whole verdict
 * of verifiers that sign no body (none, basic, token), and for a signature
 * over the body, a refusal when a header it needs is missing. Undefined
 * when only the body can tell. Same reasons as verifyHookRequest.
 */
export function verifyHookHeaders(settings: HookSettings, headers: HookHeaders, now: Date): HookVerdict | undefined {
  if (settings.verifier === "none" || settings.verifier === "basic" || settings.verifier === "token") {
    return verifyHookRequest(settings, { headers, body: Buffer.alloc(0), now });
  }
  // Standard Webhooks also takes Svix's names for its headers.
  const present = (name: string) =>
    hookHeader(headers, name) !== undefined ||
    (settings.verifier === "standard_webhooks" && hookHeader(headers, name.replace(/^webhook-/, "svix-")) !== undefined);
  const missing = signatureHeaders(settings).find((name) => !present(name));
  return missing === undefined ? undefined : rejected(`missing ${missing} header`);
}

/** The headers a body-signing verifier reads, named as its refusals name them. */
function signatureHeaders(settings: HookSettings): string[] {
  switch (settings.verifier) {
    case "standard_webhooks":
      return ["webhook-id", "webhook-timestamp", "webhook-signature"];
    case "stripe":
      return ["Stripe-Signature"];
    case "github":
      return ["X-Hub-Signature-256"];
    case "shopify":
      return ["X-Shopify-Hmac-Sha256"];
    case "hmac":
      return settings.hmac ? [settings.hmac.header] : [];
    default:
      return [];
  }
}

function hmac(algorithm: string, key: string | Buffer, ...parts: Buffer[]): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/** Constant time for equal lengths; a length mismatch is public anyway (digest sizes are known). */
function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Constant time whatever the lengths: compares digests, so a length says nothing of the secret. */
function sameText(a: string, b: string): boolean {
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}

function decodeSignature(text: string, encoding: "hex" | "base64"): Buffer | undefined {
  const trimmed = text.trim();
  if (encoding === "hex") return /^(?:[0-9a-fA-F]{2})+$/.test(trimmed) ? Buffer.from(trimmed, "hex") : undefined;
  // base64 or base64url, padded or not.
  return /^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed) ? Buffer.from(trimmed, "base64") : undefined;
}

function timestampProblem(seconds: number, now: Date): string | undefined {
  if (!Number.isSafeInteger(seconds)) return "invalid timestamp";
  const age = now.getTime() / 1000 - seconds;
  return Math.abs(age) > hookTimestampToleranceSeconds ? "timestamp outside the 5-minute tolerance" : undefined;
}

/** GitHub, Shopify and the generic HMAC: one header holding prefix + encoded digest of the body. */
function verifyDigestHeader(
  request: HookRequestToVerify,
  name: string,
  expected: Buffer,
  encoding: "hex" | "base64",
  prefix: string,
): HookVerdict {
  const value = verifiedHeader(request.headers, name);
  if (value === undefined) return rejected(`missing ${name} header`);
  if (prefix !== "" && !value.startsWith(prefix)) return rejected(`${name} header does not start with ${prefix}`);
  const signature = decodeSignature(value.slice(prefix.length), encoding);
  if (!signature) return rejected(`${name} header is not ${prefix}<${encoding}>`);
  return sameBytes(signature, expected) ? accepted : rejected(`${name} signature does not match`);
}

/**
 * Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...] (several v1 while
 * Stripe rolls a secret; v0 and unknown schemes are ignored), HMAC-SHA256
 * with the whole "whsec_..." secret as key over "<t>.<body>".
 */
function verifyStripe(secret: string, request: HookRequestToVerify): HookVerdict {
  const value = verifiedHeader(request.headers, "Stripe-Signature");
  if (value === undefined) return rejected("missing Stripe-Signature header");
  let timestamp: string | undefined;
  const signatures: Buffer[] = [];
  for (const item of value.split(",")) {
    const equals = item.indexOf("=");
    if (equals < 0) continue;
    const key = item.slice(0, equals).trim();
    const text = item.slice(equals + 1).trim();
    if (key === "t") timestamp = text;
    else if (key === "v1") {
      const signature = decodeSignature(text, "hex");
      if (signature) signatures.push(signature);
    }
  }
  if (timestamp === undefined || !/^\d{1,12}$/.test(timestamp)) return rejected("Stripe-Signature header has no timestamp (t=)");
  if (signatures.length === 0) return rejected("Stripe-Signature header has no v1 signature");
  const stale = timestampProblem(Number(timestamp), request.now);
  if (stale) return rejected(stale);
  const expected = hmac("sha256", secret, Buffer.from(`${timestamp}.`), request.body);
  // Every candidate is compared, so the time taken does not say which matched.
  let matched = false;
  for (const signature of signatures) matched = sameBytes(signature, expected) || matched;
  return matched ? accepted : rejected("no v1 signature matches");
}

/**
 * Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature (space-
 * separated "v1,<base64>" entries: one per secret while the sender rotates),
 * HMAC-SHA256 keyed with the base64 after "whsec_" over "<id>.<timestamp>.<body>".
 * Svix sends the same under svix-* names; those are read when webhook-* are absent.
 */
function verifyStandardWebhooks(secret: string, request: HookRequestToVerify): HookVerdict {
  const read = (name: string) => verifiedHeader(request.headers, `webhook-${name}`) ?? verifiedHeader(request.headers, `svix-${name}`);
  const id = read("id");
  const timestamp = read("timestamp");
  const signatureHeader = read("signature");
  if (id === undefined) return rejected("missing webhook-id header");
  if (timestamp === undefined) return rejected("missing webhook-timestamp header");
  if (signatureHeader === undefined) return rejected("missing webhook-signature header");
  if (!/^\d{1,12}$/.test(timestamp)) return rejected("webhook-timestamp header is not Unix seconds");
  const stale = timestampProblem(Number(timestamp), request.now);
  if (stale) return rejected(stale);
  const key = standardWebhooksKey(secret);
  if (!key) return rejected("the source's secret is not a whsec_ secret");
  const signatures = signatureHeader
    .split(" ")
    .filter((entry) => entry.startsWith("v1,"))
    .flatMap((entry) => decodeSignature(entry.slice(3), "base64") ?? []);
  if (signatures.length === 0) return rejected("webhook-signature header has no v1 signature");
  const expected = hmac("sha256", key, Buffer.from(`${id}.${timestamp}.`), request.body);
  let matched = false;
  for (const signature of signatures) matched = sameBytes(signature, expected) || matched;
  return matched ? accepted : rejected("no v1 signature matches");
}

/** Authorization: Basic base64(user:password), equal to the secret "user:password". */
function verifyBasic(secret: string, headers: HookHeaders): HookVerdict {
  const value = verifiedHeader(headers, "Authorization");
  if (value === undefined) return rejected("missing Authorization header");
  const credentials = credentialsOf(value, "basic");
  if (credentials === undefined || !/^[A-Za-z0-9+/=_-]+$/.test(credentials))
    return rejected("Authorization header is not Basic credentials");
  return sameText(Buffer.from(credentials, "base64").toString("utf8"), secret) ? accepted : rejected("wrong user or password");
}

/** A configured header equal to the secret; by default Authorization: Bearer <secret>. */
function verifyToken(settings: HookSettings, headers: HookHeaders): HookVerdict {
  if (settings.tokenHeader !== "") {
    const value = verifiedHeader(headers, settings.tokenHeader);
    if (value === undefined) return rejected(`missing ${settings.tokenHeader} header`);
    return sameText(value.trim(), settings.secret) ? accepted : rejected(`wrong ${settings.tokenHeader} token`);
  }
  const value = verifiedHeader(headers, "Authorization");
  if (value === undefined) return rejected("missing Authorization header");
  const token = credentialsOf(value, "bearer");
  if (token === undefined) return rejected("Authorization header is not a Bearer token");
  return sameText(token, settings.secret) ? accepted : rejected("wrong Bearer token");
}

/**
 * What follows the scheme of an Authorization value ("Bearer  abc " →
 * "abc"), or undefined for another scheme or nothing after it. Parsed by
 * hand, in one pass: a pattern like /^Bearer\s+(.+?)\s*$/ backtracks over a
 * run of spaces, quadratic in the header's length.
 */
function credentialsOf(value: string, scheme: "basic" | "bearer"): string | undefined {
  const text = value.trim();
  let end = 0;
  // A character is whitespace (as \s means it) when trimming leaves nothing.
  while (end < text.length && text[end]!.trim() !== "") end++;
  if (end === text.length || text.slice(0, end).toLowerCase() !== scheme) return undefined;
  const rest = text.slice(end).trim();
  return rest === "" ? undefined : rest;
}
