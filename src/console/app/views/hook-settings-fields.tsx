import { HookVerifier } from "../../../../gen/waypost/v1/source_pb.js";
import { type HookDraft, verifierOptions } from "../hook-draft.js";
import { FieldError, type FieldErrors } from "../field-error.js";
import { describedBy, LabelledField } from "./labelled-field.js";

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
  const described = (field: string) => describedBy(errors, field);
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
      {draft.verifier === HookVerifier.HMAC && hmacFields()}
      {draft.verifier === HookVerifier.TOKEN && (
        <LabelledField
          id="hook-token-header"
          label="Token header"
          field="webhook.token_header"
          errors={errors}
          hint="The header whose value is the secret. Empty: Authorization: Bearer <secret>."
        >
          {(input) => (
            <input
              value={draft.tokenHeader}
              placeholder="Authorization"
              onInput={(e) => onChange({ tokenHeader: e.currentTarget.value })}
              {...input}
            />
          )}
        </LabelledField>
      )}
      <LabelledField
        id="hook-idempotency-key"
        label="Idempotency key"
        field="webhook.idempotency_key"
        errors={errors}
        hint="A header name or a JSON path ($.id): a resend with the same value is acknowledged and not processed again."
      >
        {(input) => (
          <input
            value={draft.idempotencyKey}
            placeholder="the verifier's default"
            onInput={(e) => onChange({ idempotencyKey: e.currentTarget.value })}
            {...input}
          />
        )}
      </LabelledField>
      <div class="field">
        <label for="hook-response-status">Response status</label>
        <input
          id="hook-response-status"
          inputMode="numeric"
          value={draft.responseStatus}
          placeholder="200"
          onInput={(e) => onChange({ responseStatus: e.currentTarget.value })}
          {...described("webhook.response.status")}
        />
        <FieldError errors={errors} field="webhook.response.status" />
        <label for="hook-response-content-type">Response content type</label>
        <input
          id="hook-response-content-type"
          value={draft.responseContentType}
          placeholder="application/json"
          onInput={(e) => onChange({ responseContentType: e.currentTarget.value })}
          {...described("webhook.response.content_type")}
        />
        <FieldError errors={errors} field="webhook.response.content_type" />
        <label for="hook-response-body">Response body</label>
        <input
          id="hook-response-body"
          value={draft.responseBody}
          placeholder='{"accepted":true}'
          onInput={(e) => onChange({ responseBody: e.currentTarget.value })}
          {...described("webhook.response.body")}
        />
        <FieldError errors={errors} field="webhook.response.body" />
      </div>
      <LabelledField
        id="hook-rate-limit"
        label="Rate limit"
        field="webhook.max_requests_per_second"
        errors={errors}
        hint="Requests per second accepted; over it the sender gets 429 with Retry-After. Empty or 0: no limit."
      >
        {(input) => (
          <input
            inputMode="numeric"
            value={draft.maxRequestsPerSecond}
            placeholder="0"
            onInput={(e) => onChange({ maxRequestsPerSecond: e.currentTarget.value })}
            {...input}
          />
        )}
      </LabelledField>
      <LabelledField
        id="hook-transform"
        label="Transform"
        field="webhook.transform"
        errors={errors}
        hint="JavaScript defining function transform(request), returning the calls the request makes (an array). Empty: one track per request, named by the sender. Templates for Stripe, GitHub, Shopify and any JSON: docs/webhook-sources.md."
      >
        {(input) => (
          <textarea
            rows={12}
            class="code"
            spellcheck={false}
            value={draft.transform}
            onInput={(e) => onChange({ transform: e.currentTarget.value })}
            {...input}
          />
        )}
      </LabelledField>
    </fieldset>
  );

  /** HMAC's header, algorithm, encoding and prefix (JSX, not a component: no remount per render). */
  function hmacFields() {
    return (
      <div class="field">
        <label for="hook-hmac-header">Signature header</label>
        <input
          id="hook-hmac-header"
          value={draft.hmacHeader}
          placeholder="X-Signature"
          onInput={(e) => onChange({ hmacHeader: e.currentTarget.value })}
          {...described("webhook.hmac.header")}
        />
        <FieldError errors={errors} field="webhook.hmac.header" />
        <label for="hook-hmac-algorithm">Algorithm</label>
        <select id="hook-hmac-algorithm" value={draft.hmacAlgorithm} onChange={(e) => onChange({ hmacAlgorithm: e.currentTarget.value })}>
          {["sha1", "sha256", "sha512"].map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
        <FieldError errors={errors} field="webhook.hmac.algorithm" />
        <label for="hook-hmac-encoding">Encoding</label>
        <select id="hook-hmac-encoding" value={draft.hmacEncoding} onChange={(e) => onChange({ hmacEncoding: e.currentTarget.value })}>
          {["hex", "base64"].map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
        <FieldError errors={errors} field="webhook.hmac.encoding" />
        <label for="hook-hmac-prefix">Prefix</label>
        <input
          id="hook-hmac-prefix"
          value={draft.hmacPrefix}
          placeholder="sha256="
          onInput={(e) => onChange({ hmacPrefix: e.currentTarget.value })}
          {...described("webhook.hmac.prefix")}
        />
        <FieldError errors={errors} field="webhook.hmac.prefix" />
      </div>
    );
  }
}
