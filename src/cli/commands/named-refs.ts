import { DestinationService } from "../../../gen/waypost/v1/destination_pb.js";
import { SourceService } from "../../../gen/waypost/v1/source_pb.js";
import type { CliContext } from "../context.js";
import { UsageError } from "../errors.js";
import { listPages } from "./list-pages.js";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A reference to a resource that has a name (a destination, a source) as
 * its id: an id as given (without a look-up: the RPC says if it does not
 * exist), else the one resource of that name. Names are not unique, so
 * several of one name is a usage error that lists them: acting on one of
 * them at random (a bulk retry, say) would be worse.
 */
async function resolveNamedRef<T extends { id: string; name: string }>(
  ref: string,
  flag: string,
  /** What it is ("destination"), and every one there is. */
  noun: string,
  list: () => Promise<T[]>,
): Promise<string> {
  const plural = `${noun}s`;
  if (uuid.test(ref)) return ref;
  const named = (await list()).filter((item) => item.name === ref);
  if (named.length === 1) return named[0]!.id;
  if (named.length === 0) {
    throw new UsageError(`${flag}: no ${noun} has the id or name ${JSON.stringify(ref)} (waypost ${plural} list shows them)`);
  }
  const matches = named.map((item) => `  ${item.id}  ${item.name}`).join("\n");
  throw new UsageError(`${flag}: ${named.length} ${plural} are named ${JSON.stringify(ref)}; give one's id:\n${matches}`);
}

/**
 * A kind of resource with a name: every one of them (`listAll`, page by
 * page through `page`), and a reference to one as its id (`resolve`).
 */
function namedResource<R extends { nextPageToken: string }, T extends { id: string; name: string }>(
  noun: string,
  /** What names the reference in a usage error, by default. */
  flag: string,
  page: (ctx: CliContext, pageToken: string, pageSize: number) => Promise<R>,
  items: (response: R) => T[],
) {
  const listAll = async (ctx: CliContext): Promise<T[]> =>
    (await listPages((pageToken, pageSize) => page(ctx, pageToken, pageSize), items)).items;
  return {
    listAll,
    resolve: (ctx: CliContext, ref: string, named = flag) => resolveNamedRef(ref, named, noun, () => listAll(ctx)),
  };
}

const destinations = namedResource(
  "destination",
  "--destination",
  (ctx, pageToken, pageSize) => ctx.admin(DestinationService).listDestinations({ pageSize, pageToken }, { signal: ctx.signal }),
  (page) => page.destinations,
);
const sources = namedResource(
  "source",
  "<source>",
  (ctx, pageToken, pageSize) => ctx.admin(SourceService).listSources({ pageSize, pageToken }, { signal: ctx.signal }),
  (page) => page.sources,
);

/** Every destination, page by page; --destination's value (or another flag's) as an id. */
export const { listAll: listAllDestinations, resolve: resolveDestinationRef } = destinations;
/** Every source, page by page; a SOURCE argument as an id. */
export const { listAll: listAllSources, resolve: resolveSourceRef } = sources;
