import type { CliContext } from "../context.js";
import { listAllDestinations } from "./named-refs.js";

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
