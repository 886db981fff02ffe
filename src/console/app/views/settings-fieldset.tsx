import type { FieldErrors } from "../field-error.js";
import { type InputAttributes, LabelledField } from "./labelled-field.js";

/**
 * One field of a form, described rather than written out: the brokers' and
 * the warehouse's settings, flow control and the routing rules are lists
 * of these, as a catalog entry's settings form is built from its field
 * descriptions (integration-fields.tsx).
 */
export interface SettingField<D> {
  /** The part of the draft it edits (text, or true/false for a checkbox). */
  key: keyof D & string;
  /** As the server names it in its messages: `amqp.url`. The input's id is the form's prefix and this. */
  field: string;
  label: string;
  hint?: string;
  placeholder?: string;
  /**
   * text (the default); numeric: a whole number; secret: never shown as
   * typed; lines: one value a line; code: a program or JSON; check: a
   * checkbox; select: one of `options`.
   */
  input?: "text" | "numeric" | "secret" | "lines" | "code" | "check" | "select";
  /** A textarea's height. */
  rows?: number;
  /** A select's options: value and label. */
  options?: ReadonlyArray<readonly [string, string]>;
  /** The server names parts of it (filter.properties.total, nats.servers[1]): their messages are its. */
  parts?: boolean;
}

interface SettingProps<D> {
  draft: D;
  errors: FieldErrors;
  onChange(change: Partial<D>): void;
  /** What the inputs' ids start with (default "destination"). */
  idPrefix?: string;
}

/** One described field, with its label, hint and the server's message about it. */
export function SettingInput<D>(props: SettingProps<D> & { setting: SettingField<D> }) {
  const { setting, draft, errors } = props;
  const id = `${props.idPrefix ?? "destination"}-${setting.field.replace(/\W+/g, "-")}`;
  const set = (value: string | boolean) => props.onChange({ [setting.key]: value } as Partial<D>);
  const value = draft[setting.key];
  if (setting.input === "check") {
    const hintId = setting.hint ? `hint-${id}` : undefined;
    return (
      <div class="field">
        <label class="check">
          <input type="checkbox" checked={value === true} onChange={(e) => set(e.currentTarget.checked)} aria-describedby={hintId} />{" "}
          {setting.label}
        </label>
        {setting.hint && (
          <p id={hintId} class="hint">
            {setting.hint}
          </p>
        )}
      </div>
    );
  }
  return (
    <LabelledField id={id} label={setting.label} field={setting.field} hint={setting.hint} errors={errors} prefix={setting.parts}>
      {(input) => control(setting, String(value), set, input)}
    </LabelledField>
  );
}

/** The input of a described field that is not a checkbox. */
function control<D>(setting: SettingField<D>, value: string, set: (value: string) => void, input: InputAttributes) {
  const typed = { placeholder: setting.placeholder, value, ...input };
  const onInput = (e: { currentTarget: { value: string } }) => set(e.currentTarget.value);
  switch (setting.input) {
    case "select":
      return (
        <select {...typed} onChange={onInput}>
          {setting.options?.map(([option, label]) => (
            <option key={option} value={option}>
              {label}
            </option>
          ))}
        </select>
      );
    case "lines":
      return <textarea rows={setting.rows ?? 2} {...typed} onInput={onInput} />;
    case "code":
      return <textarea rows={setting.rows ?? 4} class="code" spellcheck={false} {...typed} onInput={onInput} />;
    case "secret":
      return <input type="password" autocomplete="off" {...typed} onInput={onInput} />;
    case "numeric":
      return <input type="text" inputMode="numeric" {...typed} onInput={onInput} />;
    default:
      return <input type="text" autocomplete="off" {...typed} onInput={onInput} />;
  }
}

/** Described fields, one after another. */
export function SettingInputs<D>(props: SettingProps<D> & { fields: ReadonlyArray<SettingField<D>> }) {
  const { fields, ...shared } = props;
  return (
    <>
      {fields.map((setting) => (
        <SettingInput key={setting.key} setting={setting} {...shared} />
      ))}
    </>
  );
}

/** Described fields in a fieldset of their own: a kind's settings, a destination's flow control. */
export function SettingsFieldset<D>(props: SettingProps<D> & { legend: string; fields: ReadonlyArray<SettingField<D>> }) {
  const { legend, ...inputs } = props;
  return (
    <fieldset>
      <legend>{legend}</legend>
      <SettingInputs {...inputs} />
    </fieldset>
  );
}
