import type { DestinationDraft } from "../destination-draft.js";
import type { FieldErrors } from "../field-error.js";
import { type SettingField, SettingsFieldset } from "./settings-fieldset.js";

const fields: ReadonlyArray<SettingField<DestinationDraft>> = [
  {
    key: "rateLimit",
    field: "maxRequestsPerSecond",
    label: "Rate limit (requests per second)",
    input: "numeric",
    placeholder: "no limit",
    hint: "At most this many deliveries a second, over all workers. Empty or 0: no limit.",
  },
  {
    key: "ordering",
    field: "ordering",
    label: "Ordering",
    input: "select",
    options: [
      ["none", "None"],
      ["per-user", "Per user"],
    ],
    hint: "Per user: one user's deliveries go out one at a time, in the order their calls arrived. None: as soon as they are due.",
  },
];

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
  return <SettingsFieldset legend="Flow control" fields={fields} {...props} />;
}
