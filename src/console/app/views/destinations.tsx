import { DataTable, ErrorMessage } from "../components.js";
import { kindFormOf } from "../kinds/registry.js";
import { useAction, useLoad, useMay } from "../context.js";
import { healthLabel, orderingLabel, rateLimitLabel } from "../health.js";
import { allDestinations, allSources } from "../paging.js";
import { destinationTell, sharedNames, sourceTell } from "../twins.js";
import { TwinHint } from "../names.js";

/** Destinations: list, enable/disable, delete; create and edit are on their own page. */
export function DestinationsView() {
  const loaded = useLoad(
    async (api) => ({
      destinations: await allDestinations(api),
      sources: await allSources(api),
    }),
    [],
  );
  const action = useAction(loaded.reload);
  const may = useMay();
  const editable = may("DestinationService/UpdateDestination");
  const shared = sharedNames(loaded.data?.destinations ?? []);
  const sharedSources = sharedNames(loaded.data?.sources ?? []);
  // A source's name, with the start of its id when another source has that name too.
  const sourceName = (id: string) => {
    const source = loaded.data?.sources.find((s) => s.id === id);
    if (!source) return id;
    return sharedSources.has(source.name) ? `${source.name} (${sourceTell(source)})` : source.name;
  };

  const setEnabled = (id: string, etag: string, enabled: boolean) =>
    action.run((api) => api.destinations.updateDestination({ destination: { id, etag, enabled }, updateMask: { paths: ["enabled"] } }));
  const remove = (id: string, name: string) =>
    action.confirmRun(`Delete the destination ${name}? Its pending deliveries are cancelled.`, (api) =>
      api.destinations.deleteDestination({ id }),
    );

  return (
    <section>
      <h1>Destinations</h1>
      {may("DestinationService/CreateDestination") && (
        <p>
          <a class="button" href="/console/destinations/new">
            New destination
          </a>
        </p>
      )}
      <ErrorMessage error={action.error ?? loaded.error} />
      <DataTable
        label="Destinations"
        columns={["Name", "State", "Health", "Sources", "Sends to", "Shared secret", "Signing secret", "Rate limit", "Ordering", "Actions"]}
        items={loaded.data?.destinations}
        empty="No destinations yet."
        row={(d) => (
          <tr key={d.id}>
            <td>
              <a href={`/console/destinations/${d.id}`}>{d.name}</a>
              {shared.has(d.name) && <TwinHint text={destinationTell(d)} />}
            </td>
            <td>{d.enabled === false ? "disabled" : "enabled"}</td>
            <td title={d.lastError ? `Last error: ${d.lastError}` : undefined}>{healthLabel(d)}</td>
            <td>{d.sourceIds.map(sourceName).join(", ")}</td>
            <td>{kindFormOf(d).Where({ destination: d })}</td>
            <td>{d.hasSharedSecret ? "set" : "none"}</td>
            <td>{d.hasSigningSecret ? "set" : "none"}</td>
            <td>{rateLimitLabel(d)}</td>
            <td>{orderingLabel(d)}</td>
            <td class="actions">
              {editable && (
                <button
                  type="button"
                  aria-label={`${d.enabled === false ? "Enable" : "Disable"} ${d.name}`}
                  onClick={() => setEnabled(d.id, d.etag, d.enabled === false)}
                >
                  {d.enabled === false ? "Enable" : "Disable"}
                </button>
              )}
              <a class="button" href={`/console/destinations/${d.id}`} aria-label={`${editable ? "Edit" : "View"} ${d.name}`}>
                {editable ? "Edit" : "View"}
              </a>
              {may("DestinationService/DeleteDestination") && (
                <button type="button" class="danger" aria-label={`Delete ${d.name}`} onClick={() => remove(d.id, d.name)}>
                  Delete
                </button>
              )}
            </td>
          </tr>
        )}
      />
    </section>
  );
}
