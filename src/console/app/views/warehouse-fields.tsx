import type { DestinationDraft } from "../destination-draft-types.js";
import { errorId, FieldError, type FieldErrors } from "../field-error.js";

/**
 * A Postgres destination's warehouse: its URL (write-only: an edit shows it
 * with the password masked, and sending that back keeps the stored one) and
 * schema. The server's messages (`destination.postgres.url: …`) are shown
 * under each field.
 */
export function WarehouseFields(props: {
  draft: DestinationDraft;
  errors: FieldErrors;
  onChange(change: Partial<DestinationDraft>): void;
}) {
  const { draft, errors, onChange } = props;
  const invalid = (field: string) => ({
    "aria-invalid": errors[field] ? ("true" as const) : undefined,
    "aria-describedby": errors[field] ? errorId(field) : `hint-${field.replace(".", "-")}`,
  });
  return (
    <fieldset>
      <legend>Warehouse</legend>
      <div class="field">
        <label for="destination-postgres-url">Warehouse URL</label>
        <input
          id="destination-postgres-url"
          type="text"
          autocomplete="off"
          placeholder="postgres://user:password@host:5432/database"
          value={draft.postgresUrl}
          onInput={(e) => onChange({ postgresUrl: e.currentTarget.value })}
          {...invalid("postgres.url")}
        />
        <p id="hint-postgres-url" class="hint">
          The password is never shown again: keep the masked URL to keep it.
        </p>
        <FieldError errors={errors} field="postgres.url" />
      </div>
      <div class="field">
        <label for="destination-schema">Schema</label>
        <input
          id="destination-schema"
          placeholder="waypost"
          value={draft.schema}
          onInput={(e) => onChange({ schema: e.currentTarget.value })}
          {...invalid("postgres.schema")}
        />
        <p id="hint-postgres-schema" class="hint">
          Tables go in this schema, created when missing.
        </p>
        <FieldError errors={errors} field="postgres.schema" />
      </div>
    </fieldset>
  );
}
