/**
 * A proto enum beside the names the domain stores for it, from one table
 * written once: name → value, read both ways. Every proto enum's value 0 is
 * its UNSPECIFIED, which a request leaves when it sets nothing.
 */
export interface ProtoEnumNames<V extends number, N extends string> {
  /** Whether this build knows the value: UNSPECIFIED, or one of the table's. */
  knows(value: V): boolean;
  /** The value's name: `unspecified`'s for UNSPECIFIED; undefined for a value this build does not know (a newer client's). */
  nameOf(value: V): N | undefined;
  valueOf(name: N): V;
}

/**
 * The table protoEnumNames takes when each name the domain stores is the
 * proto enum's own name in lower case ("standard_webhooks" for
 * STANDARD_WEBHOOKS). `names` is the domain's list; a name the enum lacks
 * does not compile.
 */
export function lowerCaseNames<N extends string, V extends number>(
  protoEnum: Readonly<Record<Uppercase<N>, V>>,
  names: readonly N[],
): Record<N, V> {
  return Object.fromEntries(names.map((name) => [name, protoEnum[name.toUpperCase() as Uppercase<N>]])) as Record<N, V>;
}

/**
 * @param values each name and its value, UNSPECIFIED left out
 * @param unspecified the name UNSPECIFIED reads as, when it reads as one
 */
export function protoEnumNames<V extends number, N extends string>(
  values: Readonly<Record<N, V>>,
  unspecified?: NoInfer<N>,
): ProtoEnumNames<V, N> {
  const names = new Map<number, N>((Object.entries(values) as Array<[N, V]>).map(([name, value]) => [value, name]));
  if (unspecified !== undefined) names.set(0, unspecified);
  return {
    knows: (value) => value === 0 || names.has(value),
    nameOf: (value) => names.get(value),
    valueOf: (name) => values[name],
  };
}
