import { useState } from "preact/hooks";
import type { Destination } from "../../../../gen/waypost/v1/destination_pb.js";
import { DestinationSelect } from "../destination-select.js";
import { statusOptions, type DeliveryFilter } from "../delivery-filter.js";

/** The filter form of the Deliveries page; applies on submit. */
export function DeliveryFilters(props: { filter: DeliveryFilter; destinations: Destination[]; onApply(filter: DeliveryFilter): void }) {
  const [draft, setDraft] = useState(props.filter);
  const set = (key: keyof DeliveryFilter) => (e: { currentTarget: { value: string } }) =>
    setDraft((d) => ({ ...d, [key]: e.currentTarget.value }));
  return (
    // biome-ignore lint/a11y/useSemanticElements: a <search> element wrapping the form would need its own label; role="search" on the form is the same landmark
    <form
      class="filters"
      role="search"
      aria-label="Filter deliveries"
      onSubmit={(e) => {
        e.preventDefault();
        props.onApply(draft);
      }}
    >
      <DestinationSelect
        value={draft.destination}
        destinations={props.destinations}
        onChange={(id) => setDraft((d) => ({ ...d, destination: id }))}
      />
      <label>
        Status
        <select value={draft.status} onChange={set("status")}>
          <option value="">Any status</option>
          {statusOptions.map(([name]) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
      </label>
      <label>
        Message ID
        <input value={draft.messageId} onInput={set("messageId")} />
      </label>
      <label>
        User ID
        <input value={draft.userId} onInput={set("userId")} />
      </label>
      <label>
        Created since
        <input type="datetime-local" step={1} value={draft.since} onInput={set("since")} />
      </label>
      <label>
        Created before
        <input type="datetime-local" step={1} value={draft.until} onInput={set("until")} />
      </label>
      <div class="buttons">
        <button type="submit">Search</button>
        <button
          type="button"
          class="quiet"
          onClick={() => {
            const empty = { destination: "", status: "", messageId: "", userId: "", since: "", until: "" };
            setDraft(empty);
            props.onApply(empty);
          }}
        >
          Clear filters
        </button>
      </div>
    </form>
  );
}
