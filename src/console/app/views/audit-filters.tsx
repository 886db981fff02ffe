import { useState } from "preact/hooks";
import { type AuditFilter, noAuditFilter } from "../audit-filter.js";

/** The filter form of the Audit log page; applies on submit. */
export function AuditFilters(props: { filter: AuditFilter; onApply(filter: AuditFilter): void }) {
  const [draft, setDraft] = useState(props.filter);
  const set = (key: keyof AuditFilter) => (e: { currentTarget: { value: string } }) =>
    setDraft((d) => ({ ...d, [key]: e.currentTarget.value }));
  return (
    // biome-ignore lint/a11y/useSemanticElements: a <search> element wrapping the form would need its own label; role="search" on the form is the same landmark
    <form
      class="filters"
      role="search"
      aria-label="Filter the audit log"
      onSubmit={(e) => {
        e.preventDefault();
        props.onApply(draft);
      }}
    >
      <label>
        Actor ID
        <input value={draft.actor} onInput={set("actor")} />
      </label>
      <label>
        Target ID
        <input value={draft.target} onInput={set("target")} />
      </label>
      <label>
        Action
        <input value={draft.action} onInput={set("action")} placeholder="token.create, or destination." />
      </label>
      <label>
        Since
        <input type="datetime-local" step={1} value={draft.since} onInput={set("since")} />
      </label>
      <label>
        Until
        <input type="datetime-local" step={1} value={draft.until} onInput={set("until")} />
      </label>
      <div class="buttons">
        <button type="submit">Search</button>
        <button
          type="button"
          class="quiet"
          onClick={() => {
            setDraft(noAuditFilter);
            props.onApply(noAuditFilter);
          }}
        >
          Clear filters
        </button>
      </div>
    </form>
  );
}
