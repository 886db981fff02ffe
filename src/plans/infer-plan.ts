import type { JsonSchema, PlanDocument } from "./plan-document.js";

/** What was seen at one object place (a track event's properties, identify's traits...). */
interface ObjectStats {
  objects: number;
  keys: Map<string, ValueStats>;
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
  return { objects: 0, keys: new Map() };
}

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value === "object" ? "object" : typeof value;
}

function observe(stats: ObjectStats, value: Record<string, unknown>, depth: number): void {
  stats.objects += 1;
  for (const [key, child] of Object.entries(value)) {
    let entry = stats.keys.get(key);
    if (!entry) {
      entry = { present: 0, types: new Set(), object: undefined };
      stats.keys.set(key, entry);
    }
    entry.present += 1;
    const type = jsonType(child);
    entry.types.add(type);
    if (type === "object" && depth < maxDepth) {
      entry.object ??= newObjectStats();
      observe(entry.object, child as Record<string, unknown>, depth + 1);
    }
  }
}

function toSchema(stats: ObjectStats): Record<string, unknown> {
  const names = [...stats.keys.keys()].sort();
  const properties: Record<string, JsonSchema> = {};
  for (const name of names) {
    const entry = stats.keys.get(name)!;
    const types = [...entry.types].sort();
    const schema: Record<string, unknown> = { type: types.length === 1 ? types[0] : types };
    if (entry.object && types.length === 1) Object.assign(schema, toSchema(entry.object));
    properties[name] = schema;
  }
  const required = names.filter((name) => stats.keys.get(name)!.present === stats.objects);
  return { type: "object", properties, ...(required.length > 0 ? { required } : {}) };
}

/**
 * A plan built from stored call bodies (the JSON the webhooks get): every
 * track event and every property and trait seen, with the JSON types seen
 * (several as a list), required when present in every call of its kind.
 * Events, keys and types are sorted, so that inferring again gives a small
 * diff. Unplanned events are refused by the plan it gives.
 */
export function inferPlan(bodies: Iterable<string>, name: string): PlanDocument {
  const events = new Map<string, ObjectStats>();
  const sections = { identify: newObjectStats(), group: newObjectStats(), page: newObjectStats() };
  for (const text of bodies) {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      continue;
    }
    const object = (key: string) => {
      const value = body[key];
      return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
    };
    if (body.type === "track" && typeof body.event === "string") {
      let stats = events.get(body.event);
      if (!stats) {
        stats = newObjectStats();
        events.set(body.event, stats);
      }
      observe(stats, object("properties"), 1);
    } else if (body.type === "identify" || body.type === "group") {
      observe(sections[body.type], object("traits"), 1);
    } else if (body.type === "page") {
      observe(sections.page, object("properties"), 1);
    }
  }
  const plan: PlanDocument = { name, allowUnplannedEvents: false, events: {} };
  for (const event of [...events.keys()].sort()) plan.events![event] = { properties: toSchema(events.get(event)!) };
  if (sections.identify.objects > 0) plan.identify = { traits: toSchema(sections.identify) };
  if (sections.group.objects > 0) plan.group = { traits: toSchema(sections.group) };
  if (sections.page.objects > 0) plan.page = { properties: toSchema(sections.page) };
  return plan;
}
