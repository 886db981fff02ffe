import { createRequire } from "node:module";

// The catalog is CommonJS, and is always loaded through require: actions-core
// also ships an ESM build, and importing that would give a second copy
// whose error classes and request client are not the ones the entries use.
// Entries are loaded one by one: the package's index requires every entry,
// and one of them needs a module the package does not declare (xml-js).
const require = createRequire(import.meta.url);

/** A catalog entry's definition, as the catalog's runtime takes it (typed loosely: it is the catalog's own shape). */
export type EntryDefinition = {
  name: string;
  slug?: string;
  description?: string;
  mode?: string;
  authentication?: { scheme: string; fields?: Record<string, Record<string, unknown>> };
  actions: Record<string, Record<string, unknown>>;
  presets?: Array<Record<string, unknown>>;
  extendRequest?: unknown;
} & Record<string, unknown>;

const loaded = new Map<string, EntryDefinition>();
const slugPattern = /^[a-z0-9][a-z0-9-]{0,99}$/;

/**
 * The definition of the entry with this slug (its folder in the catalog),
 * loaded on first use and kept; undefined when the catalog has none. Whether
 * Waypost offers it is catalog.ts's question, not this one's.
 */
export function loadEntry(slug: string): EntryDefinition | undefined {
  const cached = loaded.get(slug);
  if (cached) return cached;
  if (!slugPattern.test(slug)) return undefined;
  let definition: EntryDefinition | undefined;
  try {
    definition = (require(`@segment/action-destinations/dist/destinations/${slug}`) as { default?: EntryDefinition }).default;
  } catch (error) {
    if ((error as { code?: string }).code === "MODULE_NOT_FOUND") return undefined;
    throw error;
  }
  if (!definition || typeof definition !== "object" || !definition.actions) return undefined;
  loaded.set(slug, definition);
  return definition;
}

/** The catalog's runtime (@segment/actions-core), the CommonJS copy the entries use. */
export function actionsCore(): Record<string, unknown> & {
  Destination: new (definition: EntryDefinition) => Record<string, unknown>;
} {
  return require("@segment/actions-core") as ReturnType<typeof actionsCore>;
}

/**
 * The catalog's own check of a mapping's directives (@path, @template, @if,
 * ...): the first problem as `{key, message}` (`key` the mapping's top-level
 * field it is under; the message names the whole pointer, as
 * `/a/@path should be a string ...`), or undefined when it is valid.
 */
export function mappingProblem(mapping: Record<string, unknown>): { key: string; message: string } | undefined {
  const validate = (require("@segment/actions-core/mapping-kit/validate") as { default: (mapping: unknown) => void }).default;
  try {
    validate(mapping);
    return undefined;
  } catch (error) {
    const first = (Symbol.iterator in Object(error) ? [...(error as Iterable<Error>)][0] : error) as Error | undefined;
    const message = (first?.message ?? String(error)).trim().replace(/\.$/, "");
    const key = /^\/([^/\s]*)/.exec(message)?.[1] ?? "";
    return { key, message };
  }
}
