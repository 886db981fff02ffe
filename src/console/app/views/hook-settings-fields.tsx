import { HookVerifier } from "../../../../gen/waypost/v1/source_pb.js";
import { type HookDraft, verifierOptions } from "../hook-draft.js";
import { errorId, FieldError, type FieldErrors } from "../field-error.js";

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
  const described = (field: string, hint?: string) => ({
    "aria-invalid": errors[field] ? ("true" as const) : undefined,
    "aria-describedby": errors[field] ? errorId(field) : hint,
  });
  const needsSecret = draft.verifier !== HookVerifier.NONE;
  return (
    <fieldset>
      <legend>Webhook</legend>
      <div class="field">
        <label for="hook-verifier">Verifier</label>
        <select
          id="hook-verifier"
          value={String(draft.verifier)}
          onChange={(e) => onChange({ verifier: Number(e.currentTarget.value) as HookVerifier })}
          {...described("webhook.verifier")}
        >
          {verifierOptions.map((o) => (
            <option key={o.value} value={String(o.value)}>
              {o.label}
            </option>
          ))}
        </select>
        <FieldError errors={errors} field="webhook.verifier" />
      </div>
      {needsSecret && (
        <div class="field">
          <label for="hook-secret">Secret</label>
          <input
            id="hook-secret"
            type="password"
            autocomplete="new-password"
            value={draft.secret}
            placeholder={props.existing && draft.hasSecret ? "set (leave empty to keep it)" : ""}
            onInput={(e) => onChange({ secret: e.currentTarget.value })}
            {...described("webhook.secret", "hint-hook-secret")}
          />
          <p id="hint-hook-secret" class="hint">
            {secretHints[draft.verifier]} Write-only: never shown again.
            {props.existing && (draft.hasSecret ? " A secret is set; leave this empty to keep it." : " No secret is set.")}
          </p>
          <FieldError errors={errors} field="webhook.secret" />
        </div>
      )}
      {draft.verifier === HookVerifier.HMAC && hmacFields()}
      {draft.verifier === HookVerifier.TOKEN && (
        <div class="field">
          <label for="hook-token-header">Token header</label>
          <input
            id="hook-token-header"
            value={draft.tokenHeader}
            placeholder="Authorization"
            onInput={(e) => onChange({ tokenHeader: e.currentTarget.value })}
            {...described("webhook.token_header", "hint-hook-token-header")}
          />
          <p id="hint-hook-token-header" class="hint">
            The header whose value is the secret. Empty: Authorization: Bearer &lt;secret&gt;.
          </p>
          <FieldError errors={errors} field="webhook.token_header" />
        </div>
      )}
      <div class="field">
        <label for="hook-idempotency-key">Idempotency key</label>
        <input
          id="hook-idempotency-key"
          value={draft.idempotencyKey}
          placeholder="the verifier's default"
          onInput={(e) => onChange({ idempotencyKey: e.currentTarget.value })}
          {...described("webhook.idempotency_key", "hint-hook-idempotency-key")}
        />
        <p id="hint-hook-idempotency-key" class="hint">
          A header name or a JSON path ($.id): a resend with the same value is acknowledged and not processed again.
        </p>
        <FieldError errors={errors} field="webhook.idempotency_key" />
      </div>
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
      <div class="field">
        <label for="hook-rate-limit">Rate limit</label>
        <input
          id="hook-rate-limit"
          inputMode="numeric"
          value={draft.maxRequestsPerSecond}
          placeholder="0"
          onInput={(e) => onChange({ maxRequestsPerSecond: e.currentTarget.value })}
          {...described("webhook.max_requests_per_second", "hint-hook-rate-limit")}
        />
        <p id="hint-hook-rate-limit" class="hint">
          Requests per second accepted; over it the sender gets 429 with Retry-After. Empty or 0: no limit.
        </p>
        <FieldError errors={errors} field="webhook.max_requests_per_second" />
      </div>
      <div class="field">
        <label for="hook-transform">Transform</label>
        <textarea
          id="hook-transform"
          rows={12}
          class="code"
          spellcheck={false}
          value={draft.transform}
          onInput={(e) => onChange({ transform: e.currentTarget.value })}
          {...described("webhook.transform", "hint-hook-transform")}
        />
        <p id="hint-hook-transform" class="hint">
          JavaScript defining function transform(request), returning the calls the request makes (an array). Empty: one track per request,
          named by the sender. Templates for Stripe, GitHub, Shopify and any JSON: docs/webhook-sources.md.
        </p>
        <FieldError errors={errors} field="webhook.transform" />
      </div>
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
