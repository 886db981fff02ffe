import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";

export function ErrorMessage(props: { error: string | undefined }) {
  return props.error ? (
    <p role="alert" class="error">
      {props.error}
    </p>
  ) : null;
}

/** The header row of a data table: real <th> cells with column scope. */
export function HeaderRow(props: { columns: string[] }) {
  return (
    <thead>
      <tr>
        {props.columns.map((c) => (
          <th key={c} scope="col">
            {c}
          </th>
        ))}
      </tr>
    </thead>
  );
}

/** HTTP headers as a Header/Value table (values as given: the server masks secrets). */
export function HeadersTable(props: { label: string; caption?: string | undefined; headers: Record<string, string> }) {
  return (
    <table aria-label={props.label}>
      {props.caption && <caption>{props.caption}</caption>}
      <HeaderRow columns={["Header", "Value"]} />
      <tbody>
        {Object.entries(props.headers).map(([name, value]) => (
          <tr key={name}>
            <td>
              <code>{name}</code>
            </td>
            <td>
              <code>{value}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * A data table: its header row, then a row per item, or one row saying
 * there are none (`empty`) once the items are there to count.
 */
export function DataTable<T>(props: {
  label: string;
  columns: string[];
  items: readonly T[] | undefined;
  empty: ComponentChildren;
  row(item: T): ComponentChildren;
}) {
  return (
    <table aria-label={props.label}>
      <HeaderRow columns={props.columns} />
      <tbody>
        {props.items?.length === 0 && <EmptyRow columns={props.columns.length}>{props.empty}</EmptyRow>}
        {props.items?.map((item) => props.row(item))}
      </tbody>
    </table>
  );
}

export function EmptyRow(props: { columns: number; children: ComponentChildren }) {
  return (
    <tr>
      <td colSpan={props.columns} class="empty">
        {props.children}
      </td>
    </tr>
  );
}

/** A secret shown once, with a button that copies it; `note` says more (why it will not be shown again). */
export function SecretOnce(props: { label: string; value: string; note?: string; onDismiss(): void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="secret" role="status">
      <p>
        {props.label} It is shown only now: copy it.{props.note ? ` ${props.note}` : ""}
      </p>
      {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: the secret is found by what it is (its label), and is shown only once */}
      <code aria-label={props.label}>{props.value}</code>
      <button
        type="button"
        onClick={() => {
          void navigator.clipboard?.writeText(props.value).then(() => setCopied(true));
        }}
      >
        {copied ? "Copied" : "Copy"}
      </button>
      <button type="button" class="quiet" onClick={props.onDismiss}>
        Done
      </button>
    </div>
  );
}
