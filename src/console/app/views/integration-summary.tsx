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
  const settings = Object.entries(integration.settings ?? {});
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
                <code>{s.mapping && Object.keys(s.mapping).length > 0 ? JSON.stringify(s.mapping) : "(the action's defaults)"}</code>
              </td>
              <td>{s.enabled === false ? "No" : "Yes"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
