import type { Destination } from "../../../../gen/waypost/v1/destination_pb.js";
import { FieldError, type FieldErrors } from "../field-error.js";
import { describedBy } from "./labelled-field.js";

/** Keep the stored secret (edit only), set a new one, or clear it. */
export type SecretMode = "keep" | "set" | "clear";

/** A webhook destination's X-Signature secret: write-only (the server never shows it again); on edit, keep, set or clear it. */
export function SharedSecretFields(props: {
  mode: SecretMode;
  secret: string;
  errors: FieldErrors;
  onChange(change: { secretMode?: SecretMode; secret?: string }): void;
  /** The destination being edited; undefined while creating. */
  destination: Destination | undefined;
}) {
  return (
    <fieldset>
      <legend>Shared secret</legend>
      <p class="hint">Signs every request with an X-Signature header. It is write-only: the server never shows it again.</p>
      {props.destination && (
        <div class="radios">
          {(["keep", "set", "clear"] as const).map((mode) => (
            <label key={mode} class="check">
              <input type="radio" name="secret-mode" checked={props.mode === mode} onChange={() => props.onChange({ secretMode: mode })} />{" "}
              {mode === "keep"
                ? `Keep the current one (${props.destination?.hasSharedSecret ? "set" : "none"})`
                : mode === "set"
                  ? "Set a new one"
                  : "Clear it"}
            </label>
          ))}
        </div>
      )}
      {props.mode === "set" && (
        <div class="field">
          <label for="destination-secret">Shared secret</label>
          <input
            id="destination-secret"
            type="password"
            autocomplete="new-password"
            value={props.secret}
            onInput={(e) => props.onChange({ secret: e.currentTarget.value })}
            {...describedBy(props.errors, "sharedSecret")}
          />
        </div>
      )}
      <FieldError errors={props.errors} field="sharedSecret" />
    </fieldset>
  );
}
