import { HookVerifier } from "../../../../gen/waypost/v1/source_pb.js";
import { type HookDraft, verifierOptions } from "../hook-draft.js";
import type { FieldErrors } from "../field-error.js";
import { LabelledField } from "./labelled-field.js";
import { type SettingField, SettingInputs } from "./settings-fieldset.js";

/** What the secret is, per verifier (the hint under the field). */
const secretHints: Partial<Record<HookVerifier, string>> = {
  [HookVerifier.STANDARD_WEBHOOKS]: "The sender's signing secret, whsec_…",
  [HookVerifier.STRIPE]: "The endpoint's signing secret from Stripe's dashboard, whsec_…",
  [HookVerifier.GITHUB]: "The webhook's secret, as typed in GitHub.",
  [HookVerifier.SHOPIFY]: "The app's client secret (or the store's webhook signing key).",
  [HookVerifier.HMAC]: "The key of the HMAC.",
  [HookVerifier.BASIC]: "user:password",
  [HookVerifier.TOKEN]: "The token the sender puts in the header.",
};

const choices = (...values: string[]) => values.map((value) => [value, value] as const);

/** HMAC's header, algorithm, encoding and prefix. */
const hmacFields: ReadonlyArray<SettingField<HookDraft>> = [
  { key: "hmacHeader", field: "webhook.hmac.header", label: "Signature header", placeholder: "X-Signature" },
  {
    key: "hmacAlgorithm",
    field: "webhook.hmac.algorithm",
    label: "Algorithm",
    input: "select",
    options: choices("sha1", "sha256", "sha512"),
  },
  { key: "hmacEncoding", field: "webhook.hmac.encoding", label: "Encoding", input: "select", options: choices("hex", "base64") },
  { key: "hmacPrefix", field: "webhook.hmac.prefix", label: "Prefix", placeholder: "sha256=" },
];

const tokenFields: ReadonlyArray<SettingField<HookDraft>> = [
  {
    key: "tokenHeader",
    field: "webhook.token_header",
    label: "Token header",
    placeholder: "Authorization",
    hint: "The header whose value is the secret. Empty: Authorization: Bearer <secret>.",
  },
];

/** What every verifier has: the idempotency key, the response, the rate limit and the transform. */
const commonFields: ReadonlyArray<SettingField<HookDraft>> = [
  {
    key: "idempotencyKey",
    field: "webhook.idempotency_key",
    label: "Idempotency key",
    placeholder: "the verifier's default",
    hint: "A header name or a JSON path ($.id): a resend with the same value is acknowledged and not processed again.",
  },
  { key: "responseStatus", field: "webhook.response.status", label: "Response status", input: "numeric", placeholder: "200" },
  { key: "responseContentType", field: "webhook.response.content_type", label: "Response content type", placeholder: "application/json" },
  { key: "responseBody", field: "webhook.response.body", label: "Response body", placeholder: '{"accepted":true}' },
  {
    key: "maxRequestsPerSecond",
    field: "webhook.max_requests_per_second",
    label: "Rate limit",
    input: "numeric",
    placeholder: "0",
    hint: "Requests per second accepted; over it the sender gets 429 with Retry-After. Empty or 0: no limit.",
  },
  {
    key: "transform",
    field: "webhook.transform",
    label: "Transform",
    input: "code",
    rows: 12,
    hint: "JavaScript defining function transform(request), returning the calls the request makes (an array). Empty: one track per request, named by the sender. Templates for Stripe, GitHub, Shopify and any JSON: docs/webhook-sources.md.",
  },
];

/**
 * A webhook source's settings (docs/webhook-sources.md): the verifier and its
 * secret (write-only), HMAC or token options, idempotency key, response, rate
 * limit and the transform. Errors are keyed by the server's field paths
 * (webhook.hmac.algorithm).
 */
export function HookSettingsFields(props: {
  draft: HookDraft;
  errors: FieldErrors;
  /** An existing source: an empty secret keeps the stored one. */
  existing: boolean;
  onChange(change: Partial<HookDraft>): void;
}) {
  const { draft, errors, onChange } = props;
  const shared = { draft, errors, onChange, idPrefix: "hook" };
  const needsSecret = draft.verifier !== HookVerifier.NONE;
  return (
    <fieldset>
      <legend>Webhook</legend>
      <LabelledField id="hook-verifier" label="Verifier" field="webhook.verifier" errors={errors}>
        {(input) => (
          <select
            value={String(draft.verifier)}
            onChange={(e) => onChange({ verifier: Number(e.currentTarget.value) as HookVerifier })}
            {...input}
          >
            {verifierOptions.map((o) => (
              <option key={o.value} value={String(o.value)}>
                {o.label}
              </option>
            ))}
          </select>
        )}
      </LabelledField>
      {needsSecret && (
        <LabelledField
          id="hook-secret"
          label="Secret"
          field="webhook.secret"
          errors={errors}
          hint={
            <>
              {secretHints[draft.verifier]} Write-only: never shown again.
              {props.existing && (draft.hasSecret ? " A secret is set; leave this empty to keep it." : " No secret is set.")}
            </>
          }
        >
          {(input) => (
            <input
              type="password"
              autocomplete="new-password"
              value={draft.secret}
              placeholder={props.existing && draft.hasSecret ? "set (leave empty to keep it)" : ""}
              onInput={(e) => onChange({ secret: e.currentTarget.value })}
              {...input}
            />
          )}
        </LabelledField>
      )}
      {draft.verifier === HookVerifier.HMAC && <SettingInputs fields={hmacFields} {...shared} />}
      {draft.verifier === HookVerifier.TOKEN && <SettingInputs fields={tokenFields} {...shared} />}
      <SettingInputs fields={commonFields} {...shared} />
    </fieldset>
  );
}
