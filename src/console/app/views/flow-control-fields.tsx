import type { DestinationDraft } from "../destination-draft-types.js";
import { errorId, FieldError, type FieldErrors } from "../field-error.js";

/**
 * A destination's flow control: its rate limit (maxRequestsPerSecond) and
 * ordering. The server's messages about them (`destination.maxRequestsPerSecond: …`,
 * `destination.ordering: …`) are shown under each field.
 */
export function FlowControlFields(props: {
  draft: DestinationDraft;
  errors: FieldErrors;
  onChange(change: Partial<DestinationDraft>): void;
}) {
  const { draft, errors, onChange } = props;
  const invalid = (field: string) => ({
    "aria-invalid": errors[field] ? ("true" as const) : undefined,
    "aria-describedby": errors[field] ? errorId(field) : `hint-${field}`,
  });
  return (
    <fieldset>
      <legend>Flow control</legend>
      <div class="field">
        <label for="destination-rate-limit">Rate limit (requests per second)</label>
        <input
          id="destination-rate-limit"
          inputMode="numeric"
          placeholder="no limit"
          value={draft.rateLimit}
          onInput={(e) => onChange({ rateLimit: e.currentTarget.value })}
          {...invalid("maxRequestsPerSecond")}
        />
        <p id="hint-maxRequestsPerSecond" class="hint">
          At most this many deliveries a second, over all workers. Empty or 0: no limit.
        </p>
        <FieldError errors={errors} field="maxRequestsPerSecond" />
      </div>
      <div class="field">
        <label for="destination-ordering">Ordering</label>
        <select
          id="destination-ordering"
          value={draft.ordering}
          onChange={(e) => onChange({ ordering: e.currentTarget.value === "per-user" ? "per-user" : "none" })}
          {...invalid("ordering")}
        >
          <option value="none">None</option>
          <option value="per-user">Per user</option>
        </select>
        <p id="hint-ordering" class="hint">
          Per user: one user's deliveries go out one at a time, in the order their calls arrived. None: as soon as they are due.
        </p>
        <FieldError errors={errors} field="ordering" />
      </div>
    </fieldset>
  );
}
