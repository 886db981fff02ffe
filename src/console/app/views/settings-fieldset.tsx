import type { FieldErrors } from "../field-error.js";
import { LabelledField } from "./labelled-field.js";

/**
 * One setting of a kind's form, described rather than written out: the
 * brokers' and the warehouse's forms are lists of these, as a catalog
 * entry's settings form is built from its field descriptions
 * (integration-fields.tsx).
 */
export interface SettingField<D> {
  /** The part of the kind's draft it edits. */
  key: keyof D & string;
  /** As the server names it in its messages: `amqp.url`. */
  field: string;
  label: string;
  hint?: string;
  placeholder?: string;
  /** text (the default); secret: never shown as typed; lines: one value a line; check: a checkbox. */
  input?: "text" | "secret" | "lines" | "check";
}

/** A kind's settings as a fieldset of described fields; each input's id is `destination-` and its field path. */
export function SettingsFieldset<D extends Record<string, string | boolean>>(props: {
  legend: string;
  fields: ReadonlyArray<SettingField<D>>;
  draft: D;
  errors: FieldErrors;
  onChange(change: Partial<D>): void;
}) {
  const { draft, errors, onChange } = props;
  const set = (key: keyof D, value: string | boolean) => onChange({ [key]: value } as Partial<D>);
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      {props.fields.map((setting) => {
        const id = `destination-${setting.field.replace(/\W+/g, "-")}`;
        const value = draft[setting.key];
        if (setting.input === "check") {
          return (
            <label key={setting.key} class="check">
              <input type="checkbox" checked={value === true} onChange={(e) => set(setting.key, e.currentTarget.checked)} /> {setting.label}
            </label>
          );
        }
        const typed = { autocomplete: "off", placeholder: setting.placeholder, value: String(value) };
        const onInput = (e: { currentTarget: { value: string } }) => set(setting.key, e.currentTarget.value);
        return (
          <LabelledField
            key={setting.key}
            id={id}
            label={setting.label}
            field={setting.field}
            hint={setting.hint}
            errors={errors}
            prefix={setting.input === "lines"}
          >
            {(input) =>
              setting.input === "lines" ? (
                <textarea rows={2} {...typed} onInput={onInput} {...input} />
              ) : setting.input === "secret" ? (
                <input type="password" {...typed} onInput={onInput} {...input} />
              ) : (
                <input type="text" {...typed} onInput={onInput} {...input} />
              )
            }
          </LabelledField>
        );
      })}
    </fieldset>
  );
}
