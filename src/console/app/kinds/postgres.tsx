import { type SettingField, SettingsFieldset } from "../views/settings-fieldset.js";
import type { KindForm } from "./kind-form.js";
import { Target } from "./target.js";

/** A Postgres destination's part of the form: the warehouse URL (masked as the server shows it, on edit) and schema. */
export type PostgresDraft = { url: string; schema: string };

const fields: ReadonlyArray<SettingField<PostgresDraft>> = [
  {
    key: "url",
    field: "postgres.url",
    label: "Warehouse URL",
    placeholder: "postgres://user:password@host:5432/database",
    // Write-only: sending the masked URL back keeps the stored one.
    hint: "The password is never shown again: keep the masked URL to keep it.",
  },
  {
    key: "schema",
    field: "postgres.schema",
    label: "Schema",
    placeholder: "waypost",
    hint: "Tables go in this schema, created when missing.",
  },
];

export const postgresForm: KindForm<PostgresDraft> = {
  draft: (destination) => ({ url: destination?.postgres?.url ?? "", schema: destination?.postgres?.schema ?? "" }),
  request: (draft) => ({ fields: { postgres: { url: draft.url.trim(), schema: draft.schema.trim() } }, paths: ["postgres"] }),
  Fields: (props) => <SettingsFieldset legend="Warehouse" fields={fields} {...props} />,
  Where: ({ destination: { postgres } }) => <Target address={postgres?.url} parts={[["schema", postgres?.schema ?? ""]]} />,
  tell: (d) => (d.postgres ? `schema ${d.postgres.schema}` : ""),
  retry: { now: "Loads it into the warehouse", again: "Loads it into the warehouse again now" },
  requestHeaders: false,
  discards: true,
};
