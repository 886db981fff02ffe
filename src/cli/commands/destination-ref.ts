import { DestinationService, type Destination } from "../../../gen/waypost/v1/destination_pb.js";
import type { CliContext } from "../context.js";
import { listPages } from "./list-pages.js";
import { resolveNamedRef } from "./named-ref.js";

/** Every destination, page by page. */
export async function listAllDestinations(ctx: CliContext): Promise<Destination[]> {
  const client = ctx.admin(DestinationService);
  const { items } = await listPages(
    (pageToken, pageSize) => client.listDestinations({ pageSize, pageToken }, { signal: ctx.signal }),
    (page) => page.destinations,
  );
  return items;
}

/** --destination's value as an id: an id as given, else the one destination of that name (named-ref.ts). */
export function resolveDestinationRef(ctx: CliContext, ref: string, flag = "--destination"): Promise<string> {
  return resolveNamedRef(ref, flag, { noun: "destination", plural: "destinations", list: () => listAllDestinations(ctx) });
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
