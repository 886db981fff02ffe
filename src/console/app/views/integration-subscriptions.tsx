import { errorId, FieldError, type FieldErrors } from "../field-error.js";
import { describedBy } from "./labelled-field.js";
import { subscriptionOfPreset, type IntegrationDraft, type SubscriptionDraft } from "../integration-draft.js";
import { parseJsonObject } from "../json-text.js";

/** At most this many subscriptions are offered in the editor (the server checks its own limit). */
const maxSubscriptions = 50;

/**
 * An integration's subscriptions: each with a name, what it subscribes to
 * (the catalog's subscription language), the action it runs (a menu of the
 * entry's actions), the mapping as JSON (checked as typed) and whether it is
 * enabled. A new destination starts with the entry's presets; none at all
 * on create also means the presets (the server fills them in), and on an
 * update keeps the stored ones.
 */
export function SubscriptionsEditor(props: {
  draft: IntegrationDraft;
  errors: FieldErrors;
  /** A new destination (none: the presets) or a stored one (none: keep them). */
  creating: boolean;
  onChange(integration: IntegrationDraft): void;
}) {
  const { draft, errors, onChange } = props;
  const entry = draft.entry;
  if (!entry) return null;
  const set = (subscriptions: SubscriptionDraft[]) => onChange({ ...draft, subscriptions });
  const change = (i: number, part: Partial<SubscriptionDraft>) => set(draft.subscriptions.map((s, j) => (j === i ? { ...s, ...part } : s)));
  const firstAction = entry.actions[0];
  const added = (): SubscriptionDraft => ({
    name: `Subscription ${draft.subscriptions.length + 1}`,
    subscribe: firstAction?.defaultSubscription || 'type = "track"',
    action: firstAction?.slug ?? "",
    mapping: "",
    enabled: true,
  });
  const presetNames = entry.presets.map((p) => p.name);
  return (
    <fieldset>
      <legend>Subscriptions</legend>
      <p class="hint">
        {entry.presets.length === 0
          ? "This entry has no presets: add a subscription for each action to run."
          : `Presets of ${entry.name}: ${presetNames.join(", ")}.`}{" "}
        {/* What the server does with none (docs/integrations.md): presets on create, the stored ones on update. */}
        {props.creating
          ? entry.presets.length > 0 && "With no subscriptions, a new destination gets these."
          : "Saving with no subscriptions keeps the stored ones."}
      </p>
      {draft.subscriptions.map((s, i) => {
        const path = `integration.subscriptions[${i}]`;
        const id = `subscription-${i}`;
        const mappingProblem = parseJsonObject(s.mapping).problem;
        const action = entry.actions.find((a) => a.slug === s.action);
        const invalid = (field: string) => describedBy(errors, `${path}.${field}`);
        return (
          <fieldset class="subscription" key={i}>
            <legend>{`Subscription ${i + 1}`}</legend>
            <div class="field">
              <label for={`${id}-name`}>{`Subscription ${i + 1} name`}</label>
              <input id={`${id}-name`} value={s.name} onInput={(e) => change(i, { name: e.currentTarget.value })} {...invalid("name")} />
              <FieldError errors={errors} field={`${path}.name`} />
            </div>
            <div class="field">
              <label for={`${id}-subscribe`}>{`Subscription ${i + 1} subscribe`}</label>
              <input
                id={`${id}-subscribe`}
                class="code"
                value={s.subscribe}
                onInput={(e) => change(i, { subscribe: e.currentTarget.value })}
                {...invalid("subscribe")}
              />
              <FieldError errors={errors} field={`${path}.subscribe`} />
            </div>
            <div class="field">
              <label for={`${id}-action`}>{`Subscription ${i + 1} action`}</label>
              <select
                id={`${id}-action`}
                value={s.action}
                onChange={(e) => change(i, { action: e.currentTarget.value })}
                {...invalid("action")}
              >
                {!action && <option value={s.action}>{s.action || "Choose…"}</option>}
                {entry.actions.map((a) => (
                  <option key={a.slug} value={a.slug}>
                    {`${a.title} (${a.slug})`}
                  </option>
                ))}
              </select>
              <FieldError errors={errors} field={`${path}.action`} />
            </div>
            <div class="field">
              <label for={`${id}-mapping`}>{`Subscription ${i + 1} mapping`}</label>
              <textarea
                id={`${id}-mapping`}
                rows={6}
                class="code"
                spellcheck={false}
                value={s.mapping}
                onInput={(e) => change(i, { mapping: e.currentTarget.value })}
                aria-invalid={mappingProblem || errors[`${path}.mapping`] ? "true" : undefined}
                aria-describedby={mappingProblem ? `${id}-mapping-problem` : errorId(`${path}.mapping`)}
              />
              {mappingProblem ? (
                <p id={`${id}-mapping-problem`} class="field-error" role="alert">
                  {`Mapping ${mappingProblem}`}
                </p>
              ) : (
                <FieldError errors={errors} field={`${path}.mapping`} prefix />
              )}
              {action && (
                <p class="hint">
                  {`Fields of ${action.title}: ${action.fields.map((f) => `${f.key}${f.required ? " (required)" : ""}`).join(", ") || "none"}. Empty: the action's defaults.`}
                </p>
              )}
            </div>
            <div class="row-actions">
              <label class="check">
                <input type="checkbox" checked={s.enabled} onChange={(e) => change(i, { enabled: e.currentTarget.checked })} />{" "}
                {`Subscription ${i + 1} enabled`}
              </label>{" "}
              <button type="button" class="quiet" onClick={() => set(draft.subscriptions.filter((_, j) => j !== i))}>
                {`Remove subscription ${i + 1}`}
              </button>
            </div>
            <FieldError errors={errors} field={path} />
          </fieldset>
        );
      })}
      <div class="form-actions">
        <button
          type="button"
          disabled={draft.subscriptions.length >= maxSubscriptions}
          onClick={() => set([...draft.subscriptions, added()])}
        >
          Add subscription
        </button>{" "}
        {entry.presets.length > 0 && (
          <button type="button" class="quiet" onClick={() => set(entry.presets.map(subscriptionOfPreset))}>
            Use the presets
          </button>
        )}
      </div>
      <FieldError errors={errors} field="integration.subscriptions" />
    </fieldset>
  );
}
