import type { MessageInitShape } from "@bufbuild/protobuf";
import { HookVerifier, type WebhookSource, type WebhookSourceSchema } from "../../../gen/waypost/v1/source_pb.js";

/** The verifiers in the menu, in the order people look for them. */
export const verifierOptions: ReadonlyArray<{ value: HookVerifier; label: string }> = [
  { value: HookVerifier.NONE, label: "None (the URL's token only)" },
  { value: HookVerifier.STRIPE, label: "Stripe" },
  { value: HookVerifier.GITHUB, label: "GitHub" },
  { value: HookVerifier.SHOPIFY, label: "Shopify" },
  { value: HookVerifier.STANDARD_WEBHOOKS, label: "Standard Webhooks" },
  { value: HookVerifier.HMAC, label: "HMAC" },
  { value: HookVerifier.BASIC, label: "Basic" },
  { value: HookVerifier.TOKEN, label: "Token" },
];

export function verifierLabel(verifier: HookVerifier): string {
  return verifierOptions.find((o) => o.value === verifier)?.label ?? "None";
}

/**
 * A webhook source's settings as people edit them: numbers as typed, so
 * that a half-typed value is not turned into 0 under their fingers.
 */
export interface HookDraft {
  verifier: HookVerifier;
  /** Empty on an existing source: keep the stored one (the secret is write-only). */
  secret: string;
  hasSecret: boolean;
  hmacHeader: string;
  hmacAlgorithm: string;
  hmacEncoding: string;
  hmacPrefix: string;
  tokenHeader: string;
  idempotencyKey: string;
  responseStatus: string;
  responseContentType: string;
  responseBody: string;
  maxRequestsPerSecond: string;
  transform: string;
}

export function hookDraftOf(webhook: WebhookSource | undefined): HookDraft {
  return {
    verifier: webhook?.verifier || HookVerifier.NONE,
    secret: "",
    hasSecret: webhook?.hasSecret ?? false,
    hmacHeader: webhook?.hmac?.header ?? "",
    hmacAlgorithm: webhook?.hmac?.algorithm || "sha256",
    hmacEncoding: webhook?.hmac?.encoding || "hex",
    hmacPrefix: webhook?.hmac?.prefix ?? "",
    tokenHeader: webhook?.tokenHeader ?? "",
    idempotencyKey: webhook?.idempotencyKey ?? "",
    responseStatus: webhook?.response?.status ? String(webhook.response.status) : "",
    responseContentType: webhook?.response?.contentType ?? "",
    responseBody: webhook?.response?.body ?? "",
    maxRequestsPerSecond: webhook?.maxRequestsPerSecond ? String(webhook.maxRequestsPerSecond) : "",
    transform: webhook?.transform ?? "",
  };
}

/** A problem the form can tell before asking the server, by the server's field path. */
export function checkHookDraft(draft: HookDraft): Record<string, string> {
  const problems: Record<string, string> = {};
  if (draft.responseStatus !== "" && !/^\d+$/.test(draft.responseStatus.trim())) problems["webhook.response.status"] = "must be a number";
  if (draft.maxRequestsPerSecond !== "" && !/^\d+$/.test(draft.maxRequestsPerSecond.trim())) {
    problems["webhook.max_requests_per_second"] = "must be a whole number (0: no limit)";
  }
  return problems;
}

/** The WebhookSource to send; an empty secret keeps the stored one on update. */
export function webhookOf(draft: HookDraft): MessageInitShape<typeof WebhookSourceSchema> {
  return {
    verifier: draft.verifier,
    secret: draft.verifier === HookVerifier.NONE ? "" : draft.secret,
    transform: draft.transform,
    idempotencyKey: draft.idempotencyKey.trim(),
    response: {
      status: draft.responseStatus.trim() === "" ? 0 : Number(draft.responseStatus),
      contentType: draft.responseContentType.trim(),
      body: draft.responseBody,
    },
    hmac:
      draft.verifier === HookVerifier.HMAC
        ? { header: draft.hmacHeader.trim(), algorithm: draft.hmacAlgorithm, encoding: draft.hmacEncoding, prefix: draft.hmacPrefix }
        : undefined,
    tokenHeader: draft.verifier === HookVerifier.TOKEN ? draft.tokenHeader.trim() : "",
    maxRequestsPerSecond: draft.maxRequestsPerSecond.trim() === "" ? 0 : Number(draft.maxRequestsPerSecond),
  };
}

/** The inbound URL of a token, on the server this console is served by. */
export function inboundUrlOf(token: string): string {
  return `${location.origin}/hooks/${token}`;
}
