import type { Destination } from "../../../gen/waypost/v1/destination_pb.js";
import { kindFormOf } from "./kinds/registry.js";

/**
 * The names more than one of `items` has. Names need not be unique, and
 * two "CRM" entries look the same: these get something beside them.
 */
export function sharedNames(items: ReadonlyArray<{ name: string }>): Set<string> {
  const seen = new Set<string>();
  const shared = new Set<string>();
  for (const { name } of items) (seen.has(name) ? shared : seen).add(name);
  return shared;
}

/** What tells a destination apart from another of its name: where it sends, and the start of its id. */
export function destinationTell(d: Destination): string {
  const where = kindFormOf(d).tell(d);
  return where ? `${where} · ${d.id.slice(0, 8)}` : d.id.slice(0, 8);
}

/** A source's: the start of its id. */
export function sourceTell(s: { id: string }): string {
  return s.id.slice(0, 8);
}
