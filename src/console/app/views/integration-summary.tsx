import type { JsonValue } from "@bufbuild/protobuf";
import type { Destination } from "../../../../gen/waypost/v1/destination_pb.js";
import { EmptyRow, HeaderRow } from "../components.js";
import { useLoad } from "../context.js";
import { maskedSecret } from "../integration-draft.js";

function shown(value: JsonValue): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * What an integration destination sends to, as stored: the catalog entry
 * (name and slug), its settings (secrets as the server masks them, never
 * their values) and its subscriptions. The form below edits them.
 */
export function IntegrationSummary(props: { destination: Destination }) {
  const integration = props.destination.integration;
  const slug = integration?.slug ?? "";
  // The entry's name and its fields' labels; the slug alone if the catalog no longer has it.
  const entry = useLoad(async (api) => (await api.integrations.getIntegration({ slug })).integration, [slug]);
  if (!integration) return null;
  const labels = new Map(entry.data?.settings.map((f) => [f.key, f.label || f.key]));
  const secrets = new Set(integration.secretSettings);
  // In the entry's order (the settings form's), then any the entry no longer lists.
  const order = entry.data?.settings.map((f) => f.key) ?? [];
  const rank = (key: string) => (order.includes(key) ? order.indexOf(key) : order.length);
  const settings = Object.entries(integration.settings ?? {}).sort(([a], [b]) => rank(a) - rank(b));
  return (
    <section aria-label="Integration">
      <h2>Integration</h2>
      <dl class="props">
        <dt>Catalog entry</dt>
        <dd>
          {entry.data ? `${entry.data.name} ` : ""}(<code>{slug}</code>)
        </dd>
        {settings.map(([key, value]) => [
          <dt key={`${key}-t`}>{labels.get(key) ?? key}</dt>,
          <dd key={`${key}-d`}>
            {secrets.has(key) || value === maskedSecret ? (
              <span>
                <code>{maskedSecret}</code> (stored)
              </span>
            ) : (
              <code>{shown(value)}</code>
            )}
          </dd>,
        ])}
      </dl>
      <table aria-label="Subscriptions">
        <HeaderRow columns={["Name", "Subscribe", "Action", "Mapping", "Enabled"]} />
        <tbody>
          {integration.subscriptions.length === 0 && <EmptyRow columns={5}>No subscriptions: nothing is sent.</EmptyRow>}
          {integration.subscriptions.map((s) => (
            <tr key={s.name}>
              <td>{s.name}</td>
              <td>
                <code>{s.subscribe}</code>
              </td>
              <td>
                <code>{s.action}</code>
              </td>
              <td>
                {s.mapping && Object.keys(s.mapping).length > 0 ? (
                  // A preset's mapping runs to dozens of fields: folded, so the table stays readable.
                  <details>
                    <summary>{`${Object.keys(s.mapping).length} fields`}</summary>
                    <pre class="body">{JSON.stringify(s.mapping, null, 2)}</pre>
                  </details>
                ) : (
                  "The action's defaults"
                )}
              </td>
              <td>{s.enabled === false ? "No" : "Yes"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
