import type { Destination } from "../../../gen/waypost/v1/destination_pb.js";
import { destinationTell, sharedNames } from "./twins.js";

// Apart from components.tsx: it tells twins apart by where they send, which
// each kind's form says, and those forms' fields use components.tsx.

/** The "Destination" filter of the deliveries list and Live: every destination by name, or all. */
export function DestinationSelect(props: {
  value: string;
  destinations: ReadonlyArray<Destination> | undefined;
  onChange(destinationId: string): void;
}) {
  const shared = sharedNames(props.destinations ?? []);
  return (
    <label>
      Destination
      <select value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        <option value="">All destinations</option>
        {props.destinations?.map((d) => (
          <option key={d.id} value={d.id}>
            {shared.has(d.name) ? `${d.name} (${destinationTell(d)})` : d.name}
          </option>
        ))}
      </select>
    </label>
  );
}
