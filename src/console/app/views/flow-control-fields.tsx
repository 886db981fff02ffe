import type { DestinationDraft } from "../destination-draft.js";
import type { FieldErrors } from "../field-error.js";
import { LabelledField } from "./labelled-field.js";

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
  return (
    <fieldset>
      <legend>Flow control</legend>
      <LabelledField
        id="destination-rate-limit"
        label="Rate limit (requests per second)"
        field="maxRequestsPerSecond"
        hint="At most this many deliveries a second, over all workers. Empty or 0: no limit."
        errors={errors}
      >
        {(input) => (
          <input
            inputMode="numeric"
            placeholder="no limit"
            value={draft.rateLimit}
            onInput={(e) => onChange({ rateLimit: e.currentTarget.value })}
            {...input}
          />
        )}
      </LabelledField>
      <LabelledField
        id="destination-ordering"
        label="Ordering"
        field="ordering"
        hint="Per user: one user's deliveries go out one at a time, in the order their calls arrived. None: as soon as they are due."
        errors={errors}
      >
        {(input) => (
          <select
            value={draft.ordering}
            onChange={(e) => onChange({ ordering: e.currentTarget.value === "per-user" ? "per-user" : "none" })}
            {...input}
          >
            <option value="none">None</option>
            <option value="per-user">Per user</option>
          </select>
        )}
      </LabelledField>
    </fieldset>
  );
}
