import type { Destination } from "../../../gen/waypost/v1/destination_pb.js";
import type { Source } from "../../../gen/waypost/v1/source_pb.js";
import { useLoad, type Loaded } from "./context.js";
import { allDestinations, allSources } from "./paging.js";
import { destinationTell, sourceTell } from "./twins.js";

export interface Names {
  destinations: Destination[];
  sources: Source[];
}

/**
 * Every destination and source, so that pages about deliveries can show
 * names where the API gives ids. Ids stay the fallback: a destination or
 * source deleted since has no name left to show.
 */
export function useNames(): Loaded<Names> {
  return useLoad(async (api) => {
    const [destinations, sources] = await Promise.all([allDestinations(api), allSources(api)]);
    return { destinations, sources };
  }, []);
}

/** The destination's name, linked to its page; its id while names load or when it is gone. */
export function DestinationLink(props: { id: string; names: Names | undefined }) {
  const destination = props.names?.destinations.find((d) => d.id === props.id);
  if (!destination) return <code title="Destination ID">{props.id}</code>;
  const twin = props.names!.destinations.some((d) => d.name === destination.name && d.id !== destination.id);
  return (
    <>
      <a href={`/console/destinations/${props.id}`} title={props.id}>
        {destination.name}
      </a>
      {twin && <TwinHint text={destinationTell(destination)} />}
    </>
  );
}

/** The source's name, linked to its row on the Sources page; its id while names load or when it is gone. */
export function SourceLink(props: { id: string; names: Names | undefined }) {
  const source = props.names?.sources.find((s) => s.id === props.id);
  if (!source) return <code title="Source ID">{props.id}</code>;
  const twin = props.names!.sources.some((s) => s.name === source.name && s.id !== source.id);
  return (
    <>
      <a href={`/console/sources#source-${props.id}`} title={props.id}>
        {source.name}
      </a>
      {twin && <TwinHint text={sourceTell(source)} />}
    </>
  );
}

/** Beside a name others share: what tells it apart, after a space (so it reads as words, to screen readers too). */
export function TwinHint(props: { text: string }) {
  return (
    <>
      {" "}
      <span class="hint twin">{props.text}</span>
    </>
  );
}
