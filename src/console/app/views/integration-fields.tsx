import { useEffect, useState } from "preact/hooks";
import type { IntegrationField, IntegrationSummary } from "../../../../gen/waypost/v1/integration_pb.js";
import { ErrorMessage } from "../components.js";
import { useSession } from "../context.js";
import { describeError } from "../errors.js";
import { FieldError, type FieldErrors } from "../field-error.js";
import { describedBy } from "./labelled-field.js";
import { integrationDraftFor, maskedSecret, type IntegrationDraft } from "../integration-draft.js";
import { SubscriptionsEditor } from "./integration-subscriptions.js";

/**
 * An integration destination's fields: on create, the catalog picker (a
 * search over ListIntegrations by name and slug); once an entry is chosen,
 * its settings form, built from GetIntegration's fields, and the
 * subscriptions. The entry of a stored destination is fixed, like its kind.
 */
export function IntegrationFields(props: {
  draft: IntegrationDraft;
  errors: FieldErrors;
  creating: boolean;
  onChange(integration: IntegrationDraft): void;
}) {
  const { draft, errors, onChange } = props;
  const { api } = useSession();
  const [loadError, setLoadError] = useState<string | undefined>();
  // A stored destination's entry (or a picked one, on a remount) is read once per slug.
  useEffect(() => {
    if (draft.slug === "" || draft.entry?.slug === draft.slug) return;
    let current = true;
    api.integrations.getIntegration({ slug: draft.slug }).then(
      (r) => current && r.integration && onChange({ ...draft, entry: r.integration }),
      (error: unknown) => current && setLoadError(describeError(error)),
    );
    return () => {
      current = false;
    };
  }, [draft.slug, draft.entry?.slug]);

  async function pick(slug: string) {
    setLoadError(undefined);
    try {
      const entry = (await api.integrations.getIntegration({ slug })).integration;
      if (entry) onChange(integrationDraftFor(entry));
    } catch (error) {
      setLoadError(describeError(error));
    }
  }

  const entry = draft.entry;
  return (
    <>
      <fieldset>
        <legend>Catalog entry</legend>
        {entry ? (
          <p>
            <strong>{entry.name}</strong> (<code>{entry.slug}</code>) {entry.description}
          </p>
        ) : (
          draft.slug !== "" && (
            <p>
              <code>{draft.slug}</code>
            </p>
          )
        )}
        {props.creating && <CatalogPicker chosen={draft.slug} onPick={pick} />}
        <ErrorMessage error={loadError} />
        <FieldError errors={errors} field="integration.slug" />
        <FieldError errors={errors} field="integration" />
      </fieldset>
      {entry && (
        <fieldset>
          <legend>{`${entry.name} settings`}</legend>
          {entry.settings.length === 0 && <p class="hint">This entry has no settings.</p>}
          {entry.settings.map((field) => (
            <SettingInput
              key={field.key}
              field={field}
              value={draft.settings[field.key]}
              errors={errors}
              onChange={(value) => onChange({ ...draft, settings: { ...draft.settings, [field.key]: value } })}
            />
          ))}
        </fieldset>
      )}
      {entry && <SubscriptionsEditor draft={draft} errors={errors} creating={props.creating} onChange={onChange} />}
    </>
  );
}

/** Search the catalog by name or slug; each result is a button that picks it. */
function CatalogPicker(props: { chosen: string; onPick(slug: string): void }) {
  const { api } = useSession();
  const [query, setQuery] = useState("");
  const [found, setFound] = useState<IntegrationSummary[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  // Each keystroke asks again; an older answer arriving late is dropped.
  useEffect(() => {
    let current = true;
    api.integrations.listIntegrations({ query: query.trim() }).then(
      (r) => {
        if (!current) return;
        setFound(r.integrations);
        setError(undefined);
      },
      (caught: unknown) => current && setError(describeError(caught)),
    );
    return () => {
      current = false;
    };
  }, [query]);
  const shown = found?.slice(0, 20) ?? [];
  return (
    <div class="catalog-picker">
      <div class="field">
        <label for="integration-search">Search the catalog</label>
        <input
          id="integration-search"
          type="search"
          placeholder="mixpanel, Slack, …"
          value={query}
          onInput={(e) => setQuery(e.currentTarget.value)}
          aria-describedby="hint-integration-search"
        />
        <p id="hint-integration-search" class="hint" role="status">
          {found === undefined
            ? "Loading the catalog…"
            : `${found.length} ${found.length === 1 ? "entry matches" : "entries match"}${found.length > shown.length ? ` (the first ${shown.length} shown)` : ""}.`}
        </p>
      </div>
      <ErrorMessage error={error} />
      <ul class="catalog" aria-label="Catalog entries">
        {shown.map((s) => (
          <li key={s.slug}>
            <button
              type="button"
              class={s.slug === props.chosen ? undefined : "quiet"}
              aria-pressed={s.slug === props.chosen}
              aria-label={`Use ${s.name} (${s.slug})`}
              onClick={() => props.onPick(s.slug)}
            >
              {s.name}
            </button>{" "}
            <code>{s.slug}</code> <span class="hint">{s.description}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}

/**
 * One setting, as its field's type asks: a checkbox, a menu of its choices,
 * a number, a password input for a secret (a stored one reads "***", kept
 * unless replaced), or text. Required ones are marked.
 */
function SettingInput(props: {
  field: IntegrationField;
  value: string | boolean | undefined;
  errors: FieldErrors;
  onChange(value: string | boolean): void;
}) {
  const { field, errors } = props;
  const path = `integration.settings.${field.key}`;
  const id = `setting-${field.key.replace(/[^\w-]/g, "_")}`;
  const label = field.label || field.key;
  const described = {
    ...describedBy(errors, path, `hint-${id}`),
    "aria-required": field.required ? ("true" as const) : undefined,
  };
  const text = typeof props.value === "string" ? props.value : "";
  const stored = field.secret && text === maskedSecret;
  const hint = [field.description, stored ? "A value is stored: leave *** to keep it." : ""].filter((s) => s !== "").join(" ");
  if (field.type === "boolean") {
    return (
      <div class="field">
        <label class="check">
          <input type="checkbox" checked={props.value === true} onChange={(e) => props.onChange(e.currentTarget.checked)} {...described} />{" "}
          {label}
        </label>
        <p id={`hint-${id}`} class="hint">
          {hint}
        </p>
        <FieldError errors={errors} field={path} />
      </div>
    );
  }
  return (
    <div class="field">
      <label for={id}>
        {label}
        {field.required && <span class="required"> (required)</span>}
      </label>
      {field.choices.length > 0 ? (
        <select id={id} value={text} onChange={(e) => props.onChange(e.currentTarget.value)} {...described}>
          {!field.required && <option value="">–</option>}
          {field.required && text === "" && <option value="">Choose…</option>}
          {field.choices.map((choice) => (
            <option key={choice} value={choice}>
              {choice}
            </option>
          ))}
        </select>
      ) : field.type === "object" || field.type === "text" ? (
        <textarea id={id} rows={3} class="code" value={text} onInput={(e) => props.onChange(e.currentTarget.value)} {...described} />
      ) : field.secret ? (
        <input
          id={id}
          type="password"
          autocomplete="new-password"
          value={text}
          onInput={(e) => props.onChange(e.currentTarget.value)}
          {...described}
        />
      ) : (
        <input
          id={id}
          // Typed as text, not "number": a stored value the field no longer takes stays visible and editable.
          type="text"
          inputMode={field.type === "number" || field.type === "integer" ? "decimal" : undefined}
          autocomplete="off"
          value={text}
          onInput={(e) => props.onChange(e.currentTarget.value)}
          {...described}
        />
      )}
      <p id={`hint-${id}`} class="hint">
        {hint}
      </p>
      <FieldError errors={errors} field={path} prefix />
    </div>
  );
}
