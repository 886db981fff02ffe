import { create } from "@bufbuild/protobuf";
import { HookVerifier, type WebhookSource, WebhookSourceSchema } from "../../gen/waypost/v1/source_pb.js";
import { hookVerifierNames, type HookSettings, type HookSettingsInput, type HookVerifierName } from "../ingest/hooks/hook-settings.js";
import { lowerCaseNames, protoEnumNames } from "./proto-enums.js";

// A webhook source's settings to and from their proto message. Validation is
// the domain's (validateHookSettings); this only renames.

const verifiers = protoEnumNames(lowerCaseNames<HookVerifierName, HookVerifier>(HookVerifier, hookVerifierNames), "none");

/** The verifier's name; an unknown enum value (a newer client) becomes a name validation refuses. */
export function hookVerifierName(value: HookVerifier): HookVerifierName {
  return verifiers.nameOf(value) ?? (`unknown verifier ${value}` as HookVerifierName);
}

export function hookVerifierValue(name: HookVerifierName): HookVerifier {
  return verifiers.valueOf(name);
}

/** What `webhook` asks for, ready for validateHookSettings. */
export function hookSettingsInputFromProto(webhook: WebhookSource): HookSettingsInput {
  return {
    verifier: hookVerifierName(webhook.verifier),
    secret: webhook.secret,
    transform: webhook.transform,
    idempotencyKey: webhook.idempotencyKey,
    response: webhook.response
      ? { status: webhook.response.status, contentType: webhook.response.contentType, body: webhook.response.body }
      : undefined,
    hmac: webhook.hmac
      ? { header: webhook.hmac.header, algorithm: webhook.hmac.algorithm, encoding: webhook.hmac.encoding, prefix: webhook.hmac.prefix }
      : undefined,
    tokenHeader: webhook.tokenHeader,
    maxRequestsPerSecond: webhook.maxRequestsPerSecond,
  };
}

/** The settings as shown: the secret never, has_secret instead. */
export function hookSettingsToProto(settings: HookSettings): WebhookSource {
  return create(WebhookSourceSchema, {
    verifier: hookVerifierValue(settings.verifier),
    secret: "",
    hasSecret: settings.secret !== "",
    transform: settings.transform,
    idempotencyKey: settings.idempotencyKey,
    response: { ...settings.response },
    ...(settings.hmac ? { hmac: { ...settings.hmac } } : {}),
    tokenHeader: settings.tokenHeader,
    maxRequestsPerSecond: settings.maxRequestsPerSecond,
  });
}
