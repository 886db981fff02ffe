import { FieldError } from "../field-error.js";
import type { KindFieldsProps } from "./kind-form-types.js";

/** A webhook destination's X-Signature secret: write-only (the server never shows it again); on edit, keep, set or clear it. */
export function SharedSecretFields(props: KindFieldsProps) {
  return (
    <fieldset>
      <legend>Shared secret</legend>
      <p class="hint">Signs every request with an X-Signature header. It is write-only: the server never shows it again.</p>
      {props.destination && (
        <div class="radios">
          {(["keep", "set", "clear"] as const).map((mode) => (
            <label key={mode} class="check">
              <input
                type="radio"
                name="secret-mode"
                checked={props.draft.secretMode === mode}
                onChange={() => props.onChange({ secretMode: mode })}
              />{" "}
              {mode === "keep"
                ? `Keep the current one (${props.destination?.hasSharedSecret ? "set" : "none"})`
                : mode === "set"
                  ? "Set a new one"
                  : "Clear it"}
            </label>
          ))}
        </div>
      )}
      {props.draft.secretMode === "set" && (
        <div class="field">
          <label for="destination-secret">Shared secret</label>
          <input
            id="destination-secret"
            type="password"
            autocomplete="new-password"
            value={props.draft.secret}
            onInput={(e) => props.onChange({ secret: e.currentTarget.value })}
            aria-invalid={props.errors.sharedSecret ? "true" : undefined}
            aria-describedby={props.errors.sharedSecret ? "error-sharedSecret" : undefined}
          />
        </div>
      )}
      <FieldError errors={props.errors} field="sharedSecret" />
    </fieldset>
  );
}
