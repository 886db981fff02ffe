import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";

// A list page's filter as it stands in the page's query string (shareable,
// no secrets): every field a string, empty when unset. The Deliveries and
// Audit log pages each name their fields and share the rest.

export type QueryFilter<Key extends string> = Record<Key, string>;

export function filterFromQueryOf<Key extends string>(keys: readonly Key[], query: Record<string, string | undefined>): QueryFilter<Key> {
  const filter = {} as QueryFilter<Key>;
  for (const key of keys) filter[key] = query[key] ?? "";
  return filter;
}

export function filterToQueryOf<Key extends string>(keys: readonly Key[], filter: QueryFilter<Key>): string {
  const params = new URLSearchParams();
  for (const key of keys) if (filter[key].trim() !== "") params.set(key, filter[key].trim());
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** A datetime-local value (the browser's time zone) as a Timestamp; undefined when empty or not a time. */
export function timeOf(value: string): Timestamp | undefined {
  if (value === "") return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : timestampFromDate(date);
}
