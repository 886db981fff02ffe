import { useLocation } from "preact-iso";
import { ErrorMessage } from "../components.js";
import { useLoad, useMay } from "../context.js";
import { allSources } from "../paging.js";
import { Backfills } from "./backfills.js";
import { DestinationForm } from "./destination-form.js";
import { DestinationHealthPanel } from "./destination-health.js";
import { IntegrationSummary } from "./integration-summary.js";

/** /console/destinations/new creates a destination; /console/destinations/ID edits one. */
export function DestinationEditView(props: { params: { id: string } }) {
  const { route } = useLocation();
  const id = props.params.id;
  const creating = id === "new";
  const may = useMay();
  const loaded = useLoad(
    async (api) => ({
      sources: await allSources(api),
      destination: creating ? undefined : (await api.destinations.getDestination({ id })).destination,
    }),
    [id],
  );
  return (
    <section>
      <h1>{creating ? "New destination" : `Destination ${loaded.data?.destination?.name ?? ""}`}</h1>
      <p>
        <a href="/console/destinations">All destinations</a>
      </p>
      <ErrorMessage error={loaded.error} />
      {loaded.data?.destination && <DestinationHealthPanel destination={loaded.data.destination} />}
      {loaded.data?.destination?.integration && <IntegrationSummary destination={loaded.data.destination} />}
      {creating && !may("DestinationService/CreateDestination") ? (
        <p class="hint">Your role cannot create destinations.</p>
      ) : (
        loaded.data && (
          <DestinationForm
            key={id}
            sources={loaded.data.sources}
            destination={loaded.data.destination}
            onSaved={() => route("/console/destinations")}
          />
        )
      )}
      {loaded.data?.destination && <Backfills destinationId={loaded.data.destination.id} />}
    </section>
  );
}
