import { DestinationService, type Destination } from "../../../gen/waypost/v1/destination_pb.js";
import type { CliContext } from "../context.js";
import { UsageError } from "../errors.js";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Every destination, page by page. */
export async function listAllDestinations(ctx: CliContext): Promise<Destination[]> {
  const client = ctx.admin(DestinationService);
  const destinations: Destination[] = [];
  let pageToken = "";
  do {
    const page = await client.listDestinations({ pageSize: 500, pageToken }, { signal: ctx.signal });
    destinations.push(...page.destinations);
    pageToken = page.nextPageToken;
  } while (pageToken);
  return destinations;
}

/**
 * --destination's value as an id: an id as given (without a look-up: the
 * RPC says if it does not exist), else the one destination of that name.
 * Names are not unique, so several of one name is a usage error that lists
 * them: acting on one of them at random (a bulk retry, say) would be worse.
 */
export async function resolveDestinationRef(ctx: CliContext, ref: string, flag = "--destination"): Promise<string> {
  if (uuid.test(ref)) return ref;
  const named = (await listAllDestinations(ctx)).filter((d) => d.name === ref);
  if (named.length === 1) return named[0]!.id;
  if (named.length === 0) {
    throw new UsageError(`${flag}: no destination has the id or name ${JSON.stringify(ref)} (waypost destinations list shows them)`);
  }
  const matches = named.map((d) => `  ${d.id}  ${d.name}`).join("\n");
  throw new UsageError(`${flag}: ${named.length} destinations are named ${JSON.stringify(ref)}; give one's id:\n${matches}`);
}

/**
 * Destination names for lines of deliveries (list, tail), listed once and again only when
 * a delivery names a destination not seen yet (created since); a deleted
 * one's id stands for its name. A name several destinations share gets the
 * id beside it, so the lines tell them apart.
 */
export function createDestinationNames(ctx: CliContext) {
  let names: Map<string, string> | undefined;
  const load = async () => {
    const all = await listAllDestinations(ctx);
    const counts = new Map<string, number>();
    for (const d of all) counts.set(d.name, (counts.get(d.name) ?? 0) + 1);
    names = new Map(all.map((d) => [d.id, counts.get(d.name)! > 1 ? `${d.name} (${d.id})` : d.name]));
  };
  return {
    async nameOf(id: string): Promise<string> {
      if (!names?.has(id)) {
        await load();
        if (!names!.has(id)) names!.set(id, id);
      }
      return names!.get(id)!;
    },
  };
}
