import { type Source, SourceKind, type WebhookSource } from "../../gen/waypost/v1/source_pb.js";
import type { SourceRow } from "../db/queries/sources.js";
import { type HookSettingsInput, hookSettingsFromStored } from "../ingest/hooks/hook-settings.js";
import { invalidArgument } from "./errors.js";
import { hookSettingsInputFromProto } from "./webhook-source-proto.js";

// What CreateSource and UpdateSource ask of a source's kind and webhook
// settings, before validation (validateHookSettings) sees the result.

/** The webhook settings a create asks for, or undefined for an sdk source. */
export function webhookInputForCreate(source: Source | undefined): HookSettingsInput | undefined {
  const kind = source?.kind ?? SourceKind.UNSPECIFIED;
  if (kind === SourceKind.UNSPECIFIED || kind === SourceKind.SDK) {
    if (source?.webhook) throw invalidArgument("source.webhook", "only with kind SOURCE_KIND_WEBHOOK");
    return undefined;
  }
  if (kind !== SourceKind.WEBHOOK) throw invalidArgument("source.kind", `unknown kind ${kind}`);
  // A webhook source without settings takes anything at its URL (verifier none).
  return source?.webhook ? hookSettingsInputFromProto(source.webhook) : {};
}

// The webhook's fields by their proto (snake_case) path, and where each sits in HookSettingsInput.
const webhookFields = {
  verifier: "verifier",
  secret: "secret",
  transform: "transform",
  idempotency_key: "idempotencyKey",
  response: "response",
  hmac: "hmac",
  token_header: "tokenHeader",
  max_requests_per_second: "maxRequestsPerSecond",
} as const satisfies Record<string, keyof HookSettingsInput>;
type WebhookField = keyof typeof webhookFields;

const updatable = ["name", "webhook", ...Object.keys(webhookFields).map((field) => `webhook.${field}`)];

/** Mask paths (snake_case); an empty mask means every field that is set. `kind` can never change. */
export function sourceUpdatePaths(paths: readonly string[], input: Source): Set<string> {
  if (paths.includes("kind")) throw invalidArgument("updateMask", "kind cannot change: create a new source");
  if (paths.length === 0) {
    const implied = new Set<string>();
    if (input.name !== "") implied.add("name");
    if (input.webhook) implied.add("webhook");
    return implied;
  }
  for (const path of paths) {
    if (!updatable.includes(path)) {
      throw invalidArgument("updateMask", `cannot update ${JSON.stringify(path)}; updatable: ${updatable.join(", ")}`);
    }
  }
  return new Set(paths);
}

/**
 * The webhook settings to validate and store, or undefined when the update
 * leaves them alone. A secret left empty keeps the stored one, as long as the
 * verifier stays the same: a secret made for one sender is never silently
 * reused by another verifier.
 */
export function mergeWebhookUpdate(current: SourceRow, input: Source, paths: ReadonlySet<string>): HookSettingsInput | undefined {
  const requestedKind = input.kind;
  const currentKind = current.kind === "webhook" ? SourceKind.WEBHOOK : SourceKind.SDK;
  if (requestedKind !== SourceKind.UNSPECIFIED && requestedKind !== currentKind) {
    throw invalidArgument("source.kind", "cannot change: create a new source");
  }
  const fields = [...paths].filter((path) => path === "webhook" || path.startsWith("webhook."));
  if (fields.length === 0) return undefined;
  if (current.kind !== "webhook") throw invalidArgument("source.webhook", "only a webhook source has webhook settings");
  const stored = hookSettingsFromStored(current.webhook);
  const asked = hookSettingsInputFromProto(input.webhook ?? ({} as WebhookSource));
  let merged: HookSettingsInput;
  if (paths.has("webhook")) merged = asked;
  else {
    merged = { ...stored };
    for (const path of fields) {
      const key = webhookFields[path.slice("webhook.".length) as WebhookField];
      (merged as Record<string, unknown>)[key] = asked[key];
    }
  }
  const askedSecret = paths.has("webhook") || paths.has("webhook.secret") ? (asked.secret ?? "") : "";
  if (askedSecret !== "") merged.secret = askedSecret;
  else merged.secret = merged.verifier === stored.verifier ? stored.secret : "";
  if (merged.verifier === "none") merged.secret = "";
  return merged;
}
