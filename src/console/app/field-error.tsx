/** Field path (as the server names it, without the resource) → message. */
export type FieldErrors = Record<string, string>;

/** Element id of a field's error message, for aria-describedby. */
export function errorId(field: string): string {
  return `error-${field.replace(/[^\w-]/g, "_")}`;
}

/**
 * The server's message for one field, shown beside it. With `prefix`, also
 * messages about the field's parts (sourceIds[2], webhooks[0].headers.X-A).
 */
export function FieldError(props: { errors: FieldErrors; field: string; prefix?: boolean }) {
  const entry = Object.entries(props.errors).find(
    ([field]) => field === props.field || (props.prefix && (field.startsWith(`${props.field}[`) || field.startsWith(`${props.field}.`))),
  );
  if (!entry) return null;
  return (
    <p id={errorId(props.field)} class="field-error" role="alert">
      {entry[0] === props.field ? entry[1] : `${entry[0]}: ${entry[1]}`}
    </p>
  );
}
