import type { ComponentChildren } from "preact";
import { errorId, FieldError, type FieldErrors } from "../field-error.js";

/**
 * Whether the server named this field (with `prefix`, also a part of it:
 * filter.properties.total, webhooks[0].headers.X-A).
 */
export function hasFieldError(errors: FieldErrors, field: string, prefix = false): boolean {
  return Object.keys(errors).some((k) => k === field || (prefix && (k.startsWith(`${field}.`) || k.startsWith(`${field}[`))));
}

/**
 * The aria attributes of an input the server may refuse: invalid, and
 * described by the server's message while there is one, else by its hint.
 */
export function describedBy(errors: FieldErrors, field: string, hintId?: string, prefix = false) {
  const invalid = hasFieldError(errors, field, prefix);
  return {
    "aria-invalid": invalid ? ("true" as const) : undefined,
    "aria-describedby": invalid ? errorId(field) : hintId,
  };
}

/** The id of the hint under the input with this id. */
const hintIdOf = (inputId: string) => `hint-${inputId}`;

/** What a LabelledField hands its input: its id, and whether and by what it is described. */
export interface InputAttributes {
  id: string;
  "aria-invalid": "true" | undefined;
  "aria-describedby": string | undefined;
}

/**
 * One labelled field of a form: its label, the input (`children` renders it
 * with the attributes given), the hint under it and the server's message
 * about it (`destination.amqp.url: …` shows as the `amqp.url` field's).
 */
export function LabelledField(props: {
  id: string;
  label: ComponentChildren;
  /** The field as the server names it in its messages. */
  field: string;
  hint?: ComponentChildren;
  errors: FieldErrors;
  /** Messages about the field's parts too (filter.properties.total). */
  prefix?: boolean;
  children(input: InputAttributes): ComponentChildren;
}) {
  const hinted = props.hint !== undefined && props.hint !== "";
  const hintId = hinted ? hintIdOf(props.id) : undefined;
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      {props.children({ id: props.id, ...describedBy(props.errors, props.field, hintId, props.prefix) })}
      {hinted && (
        <p id={hintId} class="hint">
          {props.hint}
        </p>
      )}
      <FieldError errors={props.errors} field={props.field} prefix={props.prefix} />
    </div>
  );
}
