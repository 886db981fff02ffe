import { InvalidInputError } from "../../errors.js";
import { routingLimits } from "../../routing/filter-limits.js";
import type { TransformSandboxes } from "../../sandbox/transform-sandbox.js";

// A webhook source's settings as stored in sources.webhook (jsonb). Receipt,
// processing, the API and the console all read exactly this shape. The proto
// conversion lives with the API (src/api/webhook-source-proto.ts): the
// domain never imports the generated messages.

export const hookVerifierNames = ["none", "standard_webhooks", "stripe", "github", "shopify", "hmac", "basic", "token"] as const;
export type HookVerifierName = (typeof hookVerifierNames)[number];

export type HmacAlgorithm = "sha1" | "sha256" | "sha512";
export type HmacEncoding = "hex" | "base64";

export interface HookSettings {
  verifier: HookVerifierName;
  /** "" for none; whsec_... for standard_webhooks; user:password for basic. */
  secret: string;
  /** "" = the default mapping. */
  transform: string;
  /** "" = the verifier's default; a header name, or "$.json.path". */
  idempotencyKey: string;
  /** Defaults 200, application/json, {"accepted":true}. */
  response: { status: number; contentType: string; body: string };
  hmac?: { header: string; algorithm: HmacAlgorithm; encoding: HmacEncoding; prefix: string };
  /** "" = Authorization: Bearer <secret>. */
  tokenHeader: string;
  /** 0 = no limit. */
  maxRequestsPerSecond: number;
}

/** What a caller asks for: every field optional, defaults filled by validateHookSettings. */
export interface HookSettingsInput {
  verifier?: HookVerifierName;
  secret?: string;
  transform?: string;
  idempotencyKey?: string;
  response?: { status?: number; contentType?: string; body?: string } | undefined;
  hmac?: { header?: string; algorithm?: string; encoding?: string; prefix?: string } | undefined;
  tokenHeader?: string;
  maxRequestsPerSecond?: number;
}

export const hookSettingsLimits = {
  maxSecretBytes: 4096,
  maxResponseBodyBytes: 4096,
  maxContentTypeLength: 200,
  maxIdempotencyKeyLength: 200,
  maxHmacPrefixLength: 64,
  /** Standard Webhooks secrets: whsec_ + base64 of this many bytes. */
  minStandardSecretBytes: 16,
  maxStandardSecretBytes: 128,
} as const;

export const defaultHookResponse = { status: 200, contentType: "application/json", body: '{"accepted":true}' } as const;

// RFC 9110 token characters: what a header name may be made of.
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;
// A JSON path into the body: $.a.b, each segment a key (or an array index).
const jsonPath = /^\$(\.[^.\s]+)+$/;
// Header values may not hold control characters (CR/LF would split them).
const controlCharacters = { test: (text: string) => [...text].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f) };

/**
 * The settings to store for `input`, defaults filled in; an InvalidInputError
 * names the first bad field (`source.webhook.hmac.algorithm`). With
 * `sandboxes`, the transform is parsed (never run).
 */
export async function validateHookSettings(
  input: HookSettingsInput,
  options: { field?: string; sandboxes?: TransformSandboxes } = {},
): Promise<HookSettings> {
  const field = options.field ?? "source.webhook";
  const verifier = input.verifier ?? "none";
  if (!(hookVerifierNames as readonly string[]).includes(verifier)) {
    throw new InvalidInputError(`${field}.verifier`, `must be one of ${hookVerifierNames.join(", ")}`);
  }
  const settings: HookSettings = {
    verifier,
    secret: validateSecret(`${field}.secret`, verifier, input.secret ?? ""),
    transform: await validateHookTransform(`${field}.transform`, input.transform ?? "", options.sandboxes),
    idempotencyKey: validateIdempotencyKey(`${field}.idempotency_key`, input.idempotencyKey ?? ""),
    response: validateResponse(`${field}.response`, input.response),
    tokenHeader: "",
    maxRequestsPerSecond: validateRate(`${field}.max_requests_per_second`, input.maxRequestsPerSecond ?? 0),
  };
  // The verifier-specific fields are kept only with their verifier, so a form
  // that switched verifiers cannot leave a stale header behind.
  if (verifier === "hmac") settings.hmac = validateHmac(`${field}.hmac`, input.hmac ?? {});
  if (verifier === "token") settings.tokenHeader = validateTokenHeader(`${field}.token_header`, input.tokenHeader ?? "");
  return settings;
}

function validateSecret(field: string, verifier: HookVerifierName, secret: string): string {
  if (verifier === "none") {
    if (secret !== "") throw new InvalidInputError(field, "must be empty with verifier none");
    return "";
  }
  if (secret === "") throw new InvalidInputError(field, `is required with verifier ${verifier}`);
  if (Buffer.byteLength(secret) > hookSettingsLimits.maxSecretBytes) {
    throw new InvalidInputError(field, `must be at most ${hookSettingsLimits.maxSecretBytes} bytes`);
  }
  if (controlCharacters.test(secret)) throw new InvalidInputError(field, "must not contain control characters");
  if (verifier === "standard_webhooks") {
    const bytes = standardWebhooksKey(secret);
    if (!bytes) throw new InvalidInputError(field, "must be whsec_ followed by base64");
    if (bytes.length < hookSettingsLimits.minStandardSecretBytes || bytes.length > hookSettingsLimits.maxStandardSecretBytes) {
      throw new InvalidInputError(
        field,
        `must encode ${hookSettingsLimits.minStandardSecretBytes} to ${hookSettingsLimits.maxStandardSecretBytes} bytes (it encodes ${bytes.length})`,
      );
    }
  }
  if (verifier === "basic") {
    const colon = secret.indexOf(":");
    if (colon <= 0 || colon === secret.length - 1) throw new InvalidInputError(field, "must be user:password (both non-empty)");
  }
  return secret;
}

/** The HMAC key of a Standard Webhooks secret (whsec_ + base64), or undefined when it is not one. */
export function standardWebhooksKey(secret: string): Buffer | undefined {
  if (!secret.startsWith("whsec_")) return undefined;
  const encoded = secret.slice("whsec_".length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 === 1) return undefined;
  return Buffer.from(encoded, "base64");
}

/** A transform's source: at most 64 KB, parsed in the sandbox when one is given; nothing is run. */
export async function validateHookTransform(field: string, source: string, sandboxes: TransformSandboxes | undefined): Promise<string> {
  if (source.trim() === "") return "";
  const bytes = Buffer.byteLength(source);
  if (bytes > routingLimits.maxTransformBytes) {
    throw new InvalidInputError(field, `is ${bytes} bytes, over the limit of ${routingLimits.maxTransformBytes} bytes (64 KB)`);
  }
  if (source.includes("\0")) throw new InvalidInputError(field, "must not contain NUL characters");
  const syntax = sandboxes ? await sandboxes.syntaxError(source) : undefined;
  if (syntax) throw new InvalidInputError(field, syntax);
  if (!/\bfunction\s+transform\s*\(|\btransform\s*=/.test(source)) {
    throw new InvalidInputError(field, "must define function transform(request)");
  }
  return source;
}

function validateIdempotencyKey(field: string, key: string): string {
  if (key === "") return "";
  if (key.length > hookSettingsLimits.maxIdempotencyKeyLength) {
    throw new InvalidInputError(field, `must be at most ${hookSettingsLimits.maxIdempotencyKeyLength} characters`);
  }
  if (key.startsWith("$")) {
    if (!jsonPath.test(key)) throw new InvalidInputError(field, 'must be a JSON path like "$.id" or "$.data.object.id"');
    return key;
  }
  if (!headerName.test(key)) throw new InvalidInputError(field, 'must be a header name or a JSON path like "$.id"');
  return key;
}

function validateResponse(field: string, input: HookSettingsInput["response"]): HookSettings["response"] {
  const status = input?.status || defaultHookResponse.status;
  if (!Number.isInteger(status) || status < 200 || status > 299) throw new InvalidInputError(`${field}.status`, "must be 200 to 299");
  const contentType = input?.contentType || defaultHookResponse.contentType;
  if (contentType.length > hookSettingsLimits.maxContentTypeLength || controlCharacters.test(contentType)) {
    throw new InvalidInputError(
      `${field}.content_type`,
      `must be at most ${hookSettingsLimits.maxContentTypeLength} characters, without control characters`,
    );
  }
  // 204 and 205 carry no body, so they get none by default and refuse one.
  const bodiless = status === 204 || status === 205;
  const body = input?.body || (bodiless ? "" : defaultHookResponse.body);
  if (bodiless && body !== "") throw new InvalidInputError(`${field}.body`, `must be empty with status ${status}`);
  if (Buffer.byteLength(body) > hookSettingsLimits.maxResponseBodyBytes) {
    throw new InvalidInputError(`${field}.body`, `must be at most ${hookSettingsLimits.maxResponseBodyBytes} bytes (4 KB)`);
  }
  return { status, contentType, body };
}

function validateHmac(field: string, input: NonNullable<HookSettingsInput["hmac"]>): NonNullable<HookSettings["hmac"]> {
  const header = input.header ?? "";
  if (!headerName.test(header)) throw new InvalidInputError(`${field}.header`, "must be a header name (required with verifier hmac)");
  const algorithm = input.algorithm || "sha256";
  if (algorithm !== "sha1" && algorithm !== "sha256" && algorithm !== "sha512") {
    throw new InvalidInputError(`${field}.algorithm`, "must be sha1, sha256 or sha512");
  }
  const encoding = input.encoding || "hex";
  if (encoding !== "hex" && encoding !== "base64") throw new InvalidInputError(`${field}.encoding`, "must be hex or base64");
  const prefix = input.prefix ?? "";
  if (prefix.length > hookSettingsLimits.maxHmacPrefixLength || controlCharacters.test(prefix)) {
    throw new InvalidInputError(
      `${field}.prefix`,
      `must be at most ${hookSettingsLimits.maxHmacPrefixLength} characters, without control characters`,
    );
  }
  return { header, algorithm, encoding, prefix };
}

function validateTokenHeader(field: string, header: string): string {
  if (header !== "" && !headerName.test(header)) throw new InvalidInputError(field, "must be a header name");
  return header;
}

function validateRate(field: string, rate: number): number {
  if (!Number.isInteger(rate) || rate < 0) throw new InvalidInputError(field, "must be a whole number, 0 or more");
  return rate;
}

/**
 * Settings read back from sources.webhook. They were validated when written;
 * this only fills what an older row may lack, so readers never see undefined.
 */
export function hookSettingsFromStored(value: unknown): HookSettings {
  const stored = (value ?? {}) as Partial<HookSettings>;
  const settings: HookSettings = {
    verifier: stored.verifier ?? "none",
    secret: stored.secret ?? "",
    transform: stored.transform ?? "",
    idempotencyKey: stored.idempotencyKey ?? "",
    response: { ...defaultHookResponse, ...stored.response },
    tokenHeader: stored.tokenHeader ?? "",
    maxRequestsPerSecond: stored.maxRequestsPerSecond ?? 0,
  };
  if (stored.hmac) settings.hmac = stored.hmac;
  return settings;
}
