import { isIP } from "node:net";
import type { Webhook } from "../../../../gen/waypost/v1/destination_pb.js";
import { InvalidInputError, storableTextProblem } from "../../../errors.js";
import type { AddressGuard } from "../../../outbound/address-guard.js";
import type { StoredSigningSecret } from "../../../signing/standard-webhooks.js";
import type { KindField, KindSettings } from "../kind.js";
import { isSecretHeader, maskedValue, maskHeaders } from "./secret-headers.js";
import { activeSigningSecrets } from "../../../signing/standard-webhooks.js";
import { maxSigningSecrets, rotateSigningSecrets, validateSigningSecrets } from "./signing-secrets.js";
import { type StoredWebhookBatch, validateWebhookBatch } from "./batch-settings.js";

export interface StoredWebhook {
  url: string;
  headers: Record<string, string>;
  /** Absent: one call per POST. */
  batch?: StoredWebhookBatch | undefined;
}

/** A webhook destination's settings: where it POSTs, and how it signs. */
export interface WebhookSettings {
  webhooks: StoredWebhook[];
  /** The X-Signature secret; null: none. */
  sharedSecret: string | null;
  /** Standard Webhooks secrets; expired ones are skipped when signing. */
  signingSecrets: StoredSigningSecret[];
}

export const webhookLimits = {
  maxWebhooks: 5,
  maxHeaders: 5,
  maxUrlLength: 2048,
  maxHeaderValueLength: 4096,
  maxSecretLength: 1024,
} as const;

/**
 * Headers Waypost sets itself or that belong to the connection. Names
 * starting with "webhook-" are reserved too (Standard Webhooks signing).
 */
export const reservedHeaders = new Set([
  "user-agent",
  "content-type",
  "x-signature",
  "content-length",
  "host",
  "transfer-encoding",
  "connection",
  // The call's trace context (docs/tracing.md).
  "traceparent",
  "tracestate",
]);

const headerNamePattern = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const invalid = (field: string, problem: string) => new InvalidInputError(field, problem);

const fields: readonly KindField[] = [
  { path: "webhooks", name: "webhooks", describe: "webhooks", moves: true, given: (input) => input.webhooks.length > 0 },
  { path: "shared_secret", name: "sharedSecret", describe: "shared secret", given: (input) => input.sharedSecret !== "" },
  {
    path: "signing_secrets",
    name: "signingSecrets",
    describe: "signing secrets",
    given: (input, generate) => input.signingSecrets.length > 0 || generate,
  },
];

export const webhookSettings: KindSettings<WebhookSettings> = {
  fields,
  read(input, context) {
    const { paths, current } = context;
    const webhooks = paths.has("webhooks")
      ? keepMaskedValues(
          "destination.webhooks",
          validateWebhooks("destination.webhooks", input.webhooks, context.guard),
          current?.webhooks ?? [],
        )
      : (current?.webhooks ?? []);
    const sharedSecret = paths.has("shared_secret")
      ? validateSecret("destination.sharedSecret", input.sharedSecret)
      : (current?.sharedSecret ?? null);
    const signingSecrets = paths.has("signing_secrets")
      ? validateSigningSecrets("destination.signingSecrets", input.signingSecrets)
      : activeSigningSecrets(current?.signingSecrets ?? [], context.now);
    const settings = { webhooks, sharedSecret, signingSecrets };
    return context.generatedSigningSecret ? withGeneratedSecret(settings, context.generatedSigningSecret) : settings;
  },
  toProto: (settings, now) => ({
    webhooks: maskWebhooks(settings.webhooks),
    hasSharedSecret: settings.sharedSecret !== null,
    hasSigningSecret: activeSigningSecrets(settings.signingSecrets, now).length > 0,
  }),
  toRow: (settings) => ({
    webhooks: settings.webhooks,
    shared_secret: settings.sharedSecret,
    signing_secrets: settings.signingSecrets,
  }),
  fromRow: (row) => ({ webhooks: row.webhooks, sharedSecret: row.shared_secret, signingSecrets: row.signing_secrets }),
  rotateSigningSecret(settings, now, overlapMs) {
    const rotated = rotateSigningSecrets(settings.signingSecrets, now, overlapMs);
    return { settings: { ...settings, signingSecrets: rotated.secrets }, secret: rotated.secret };
  },
};

/** Adds a secret generated on create (the response shows it once); the limit still holds. */
export function withGeneratedSecret(settings: WebhookSettings, secret: string): WebhookSettings {
  if (settings.signingSecrets.length >= maxSigningSecrets) {
    throw invalid("generateSigningSecret", `a destination has at most ${maxSigningSecrets} signing secrets`);
  }
  return { ...settings, signingSecrets: [...settings.signingSecrets, { secret, expiresAt: null }] };
}

/** 1 to 5 webhooks, each an absolute http(s) URL with at most 5 allowed headers. */
export function validateWebhooks(field: string, webhooks: readonly Webhook[], guard: AddressGuard): StoredWebhook[] {
  if (webhooks.length === 0) throw invalid(field, "at least one webhook is required");
  if (webhooks.length > webhookLimits.maxWebhooks) {
    throw invalid(field, `at most ${webhookLimits.maxWebhooks} webhooks are allowed, got ${webhooks.length}`);
  }
  return webhooks.map((webhook, i) => {
    const stored: StoredWebhook = {
      url: validateUrl(`${field}[${i}].url`, webhook.url, guard),
      headers: validateHeaders(`${field}[${i}].headers`, webhook.headers),
    };
    const batch = validateWebhookBatch(`${field}[${i}].batch`, webhook.batch);
    return batch ? { ...stored, batch } : stored;
  });
}

function validateUrl(field: string, raw: string, guard: AddressGuard): string {
  if (raw === "") throw invalid(field, "is required");
  if (raw.length > webhookLimits.maxUrlLength) {
    throw invalid(field, `is longer than ${webhookLimits.maxUrlLength} characters`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid(field, `${JSON.stringify(raw)} is not an absolute URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalid(field, `must use http or https, got ${JSON.stringify(url.protocol.replace(/:$/, ""))}`);
  }
  if (url.hostname === "") throw invalid(field, "has no host");
  // Credentials in a URL would be stored, shown by GetDestination and logged
  // with attempts; a header (webhooks[].headers) keeps them write-only.
  if (url.username !== "" || url.password !== "") {
    throw invalid(field, "must not contain a user name or password: send credentials in a webhook header");
  }
  const refused = refuseLiteralAddress(url.hostname, guard);
  if (refused) throw invalid(field, refused);
  return url.href;
}

/**
 * A host naming a loopback, private, link-local or metadata address (or
 * localhost) literally can only fail at delivery: say so when it is saved.
 * Host names are judged at delivery, on the addresses they resolve to.
 * Every kind that connects to a host checks it this way.
 */
export function refuseLiteralAddress(hostname: string, guard: AddressGuard): string | undefined {
  const host = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
  const lower = host.toLowerCase().replace(/\.$/, "");
  if (lower === "localhost" || lower.endsWith(".localhost")) {
    return guard.refuse("127.0.0.1") && `host ${hostname} is loopback; allow it with WAYPOST_ALLOW_PRIVATE_DESTINATIONS`;
  }
  if (isIP(host) === 0) return undefined;
  return guard.refuse(host);
}

function validateHeaders(field: string, headers: Record<string, string>): Record<string, string> {
  const entries = Object.entries(headers);
  if (entries.length > webhookLimits.maxHeaders) {
    throw invalid(field, `at most ${webhookLimits.maxHeaders} headers are allowed, got ${entries.length}`);
  }
  const seen = new Set<string>();
  for (const [name, value] of entries) {
    const lower = name.toLowerCase();
    if (!headerNamePattern.test(name)) throw invalid(`${field}.${name}`, "is not a valid header name");
    if (reservedHeaders.has(lower) || lower.startsWith("webhook-"))
      throw invalid(`${field}.${name}`, "is set by Waypost and cannot be configured");
    if (seen.has(lower)) throw invalid(`${field}.${name}`, "is given twice");
    seen.add(lower);
    if (/[\r\n\0]/.test(value)) throw invalid(`${field}.${name}`, "value must not contain CR, LF or NUL");
    if (value.length > webhookLimits.maxHeaderValueLength) {
      throw invalid(`${field}.${name}`, `value is longer than ${webhookLimits.maxHeaderValueLength} characters`);
    }
  }
  return { ...headers };
}

function validateSecret(field: string, secret: string): string | null {
  if (secret.length > webhookLimits.maxSecretLength) {
    throw invalid(field, `is longer than ${webhookLimits.maxSecretLength} characters`);
  }
  const problem = storableTextProblem(secret);
  if (problem) throw invalid(field, problem);
  return secret === "" ? null : secret;
}

/**
 * Webhooks as the API returns them: header values that carry credentials
 * (Authorization, names with token, key, secret...: the rule the delivery
 * views mask by) read "[masked]". Static headers are write-only, like the
 * shared secret: whoever can read a destination cannot borrow its
 * credentials.
 */
export function maskWebhooks(webhooks: readonly StoredWebhook[]): StoredWebhook[] {
  return webhooks.map((webhook) => ({
    url: webhook.url,
    headers: maskHeaders(webhook.headers),
    ...(webhook.batch ? { batch: webhook.batch } : {}),
  }));
}

/**
 * Puts the stored value back wherever an update sends a credential header
 * still reading "[masked]", so that a form or a CLI that edits what Get
 * returned keeps the credentials it never saw. The stored value comes from
 * the current webhook with the same URL, else the one at the same position
 * (the URL itself was edited); the header name matches case-insensitively.
 * A masked value with nothing stored to keep (a new header, a create) is
 * refused: sending "[masked]" as a credential is never what was meant.
 */
export function keepMaskedValues(field: string, incoming: StoredWebhook[], current: readonly StoredWebhook[]): StoredWebhook[] {
  return incoming.map((webhook, i) => {
    const source = current.find((c) => c.url === webhook.url) ?? current[i];
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(webhook.headers)) {
      if (value !== maskedValue || !isSecretHeader(name)) {
        headers[name] = value;
        continue;
      }
      const stored = source && Object.entries(source.headers).find(([n]) => n.toLowerCase() === name.toLowerCase());
      if (!stored) {
        throw invalid(`${field}[${i}].headers.${name}`, `is "${maskedValue}" but there is no stored value to keep: send the real value`);
      }
      headers[name] = stored[1];
    }
    return webhook.batch ? { url: webhook.url, headers, batch: webhook.batch } : { url: webhook.url, headers };
  });
}
