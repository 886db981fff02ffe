import type { JsonSchema, PlanDocument } from "./plan-document.js";

/**
 * What inference keeps, so that hostile or sprawling traffic (every call
 * with a thousand new keys) gives a bounded plan: memory, time and the
 * response stay in proportion to these, not to the calls read. Keys past
 * a limit are collapsed into their object's `additionalProperties`, typed
 * by the values seen; events past the limit (or with names too long for a
 * plan) are left out. Either is said in the plan's `description`.
 */
export interface InferenceLimits {
  /** Distinct keys named per object schema (an event's properties, a nested object...). */
  maxKeysPerObject: number;
  /** Distinct keys named in the whole plan. */
  maxKeys: number;
  /** A longer key is not named. */
  maxKeyLength: number;
  /** Distinct track events (a plan holds at most 2,000). */
  maxEvents: number;
  /** An event name longer than this cannot be in a plan. */
  maxEventNameLength: number;
}

export const defaultInferenceLimits: InferenceLimits = {
  maxKeysPerObject: 200,
  maxKeys: 10_000,
  maxKeyLength: 100,
  maxEvents: 2000,
  maxEventNameLength: 200,
};

/** What was seen at one object place (a track event's properties, identify's traits...). */
interface ObjectStats {
  objects: number;
  keys: Map<string, ValueStats>;
  /** The types of values under keys past the limits: `additionalProperties`. */
  others: Set<string> | undefined;
}

interface ValueStats {
  present: number;
  types: Set<string>;
  /** When some values were objects: what their keys held. */
  object: ObjectStats | undefined;
}

/** Nested objects deeper than this are typed "object" without their keys. */
const maxDepth = 5;

function newObjectStats(): ObjectStats {
  return { objects: 0, keys: new Map(), others: undefined };
}

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value === "object" ? "object" : typeof value;
}

function typeSchema(types: Set<string>): Record<string, unknown> {
  const sorted = [...types].sort();
  return { type: sorted.length === 1 ? sorted[0] : sorted };
}

function toSchema(stats: ObjectStats): Record<string, unknown> {
  const names = [...stats.keys.keys()].sort();
  const properties: Record<string, JsonSchema> = {};
  for (const name of names) {
    const entry = stats.keys.get(name)!;
    const schema = typeSchema(entry.types);
    if (entry.object && entry.types.size === 1) Object.assign(schema, toSchema(entry.object));
    properties[name] = schema;
  }
  const required = names.filter((name) => stats.keys.get(name)!.present === stats.objects);
  return {
    type: "object",
    properties,
    ...(required.length > 0 ? { required } : {}),
    ...(stats.others ? { additionalProperties: typeSchema(stats.others) } : {}),
  };
}

/** Builds a plan from stored call bodies added one at a time, within the limits. */
export interface PlanInference {
  add(body: string): void;
  /** The plan of what was added so far. */
  plan(name: string): PlanDocument;
}

/**
 * A plan built from stored call bodies (the JSON the webhooks get): every
 * track event and every property and trait seen, with the JSON types seen
 * (several as a list), required when present in every call of its kind.
 * Events, keys and types are sorted, so that inferring again gives a small
 * diff. Unplanned events are refused by the plan it gives.
 */
export function createPlanInference(limits: InferenceLimits = defaultInferenceLimits): PlanInference {
  const events = new Map<string, ObjectStats>();
  const sections = { identify: newObjectStats(), group: newObjectStats(), page: newObjectStats() };
  let keysNamed = 0;
  let keysCollapsed = 0;
  let eventsLeftOut = 0;

  function observe(stats: ObjectStats, value: Record<string, unknown>, depth: number): void {
    stats.objects += 1;
    for (const [key, child] of Object.entries(value)) {
      const type = jsonType(child);
      let entry = stats.keys.get(key);
      if (!entry) {
        if (key.length > limits.maxKeyLength || stats.keys.size >= limits.maxKeysPerObject || keysNamed >= limits.maxKeys) {
          stats.others ??= new Set();
          stats.others.add(type);
          keysCollapsed += 1;
          continue;
        }
        entry = { present: 0, types: new Set(), object: undefined };
        stats.keys.set(key, entry);
        keysNamed += 1;
      }
      entry.present += 1;
      entry.types.add(type);
      if (type === "object" && depth < maxDepth) {
        entry.object ??= newObjectStats();
        observe(entry.object, child as Record<string, unknown>, depth + 1);
      }
    }
  }

  function eventStats(name: string): ObjectStats | undefined {
    let stats = events.get(name);
    if (stats) return stats;
    if (events.size >= limits.maxEvents || name === "" || name.length > limits.maxEventNameLength) {
      eventsLeftOut += 1;
      return undefined;
    }
    stats = newObjectStats();
    events.set(name, stats);
    return stats;
  }

  return {
    add(text) {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        return;
      }
      if (body === null || typeof body !== "object") return;
      const object = (key: string) => {
        const value = body[key];
        return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
      };
      if (body.type === "track" && typeof body.event === "string") {
        const stats = eventStats(body.event);
        if (stats) observe(stats, object("properties"), 1);
      } else if (body.type === "identify" || body.type === "group") {
        observe(sections[body.type], object("traits"), 1);
      } else if (body.type === "page") {
        observe(sections.page, object("properties"), 1);
      }
    },
    plan(name) {
      const plan: PlanDocument = { name, allowUnplannedEvents: false, events: {} };
      const notes: string[] = [];
      if (keysCollapsed > 0) {
        notes.push(
          `${keysCollapsed} values under keys past the limits (${limits.maxKeysPerObject} keys per object, ${limits.maxKeys} in all, ${limits.maxKeyLength} characters a key) are described by additionalProperties`,
        );
      }
      if (eventsLeftOut > 0)
        notes.push(
          `${eventsLeftOut} track calls of events past the limit of ${limits.maxEvents} events (or with names over ${limits.maxEventNameLength} characters) were left out`,
        );
      if (notes.length > 0) plan.description = `${notes.join("; ")}.`;
      for (const event of [...events.keys()].sort()) plan.events![event] = { properties: toSchema(events.get(event)!) };
      if (sections.identify.objects > 0) plan.identify = { traits: toSchema(sections.identify) };
      if (sections.group.objects > 0) plan.group = { traits: toSchema(sections.group) };
      if (sections.page.objects > 0) plan.page = { properties: toSchema(sections.page) };
      return plan;
    },
  };
}

/** A plan inferred from bodies at hand (see createPlanInference). */
export function inferPlan(bodies: Iterable<string>, name: string, limits?: InferenceLimits): PlanDocument {
  const inference = createPlanInference(limits);
  for (const body of bodies) inference.add(body);
  return inference.plan(name);
}
