import { InvalidInputError } from "../errors.js";
import { keySegment } from "./json-path.js";

/** A JSON Schema (draft 2020-12) as the plan holds it: an object, or true/false. */
export type JsonSchema = Record<string, unknown> | boolean;

/** The plan as the operator writes it (docs/tracking-plans.md). */
export interface PlanDocument {
  name?: string;
  description?: string;
  events?: Record<string, { description?: string; properties?: JsonSchema }>;
  identify?: { traits?: JsonSchema };
  group?: { traits?: JsonSchema };
  page?: { properties?: JsonSchema };
  /** Track calls with an event the plan does not list: allowed (default) or a violation. */
  allowUnplannedEvents?: boolean;
}

/** What a plan may hold, so that a typo (`"event"`, `"trait"`) is refused rather than ignored. */
const topLevelKeys = new Set(["name", "description", "events", "identify", "group", "page", "allowUnplannedEvents"]);
const maxEvents = 2000;
const maxEventNameLength = 200;

/**
 * Checks the plan's shape (not its schemas: compilePlan does that) and
 * returns it typed; InvalidInputError names the path of the first problem.
 */
export function readPlanDocument(value: unknown, field = "plan"): PlanDocument {
  const plan = requireObject(field, value);
  const nul = findNul(plan, field);
  if (nul !== undefined) throw new InvalidInputError(nul, "contains the character U+0000, which cannot be stored");
  for (const key of Object.keys(plan)) {
    if (!topLevelKeys.has(key)) {
      throw new InvalidInputError(`${field}${keySegment(key)}`, `is not part of a plan (expected one of ${[...topLevelKeys].join(", ")})`);
    }
  }
  if (plan.name !== undefined && typeof plan.name !== "string") throw new InvalidInputError(`${field}.name`, "must be a string");
  if (plan.description !== undefined && typeof plan.description !== "string")
    throw new InvalidInputError(`${field}.description`, "must be a string");
  if (plan.allowUnplannedEvents !== undefined && typeof plan.allowUnplannedEvents !== "boolean") {
    throw new InvalidInputError(`${field}.allowUnplannedEvents`, "must be true or false");
  }
  if (plan.events !== undefined) {
    const events = requireObject(`${field}.events`, plan.events);
    const names = Object.keys(events);
    if (names.length > maxEvents)
      throw new InvalidInputError(`${field}.events`, `has ${names.length} events, over the limit of ${maxEvents}`);
    for (const name of names) {
      const at = `${field}.events${keySegment(name)}`;
      if (name === "" || name.length > maxEventNameLength) {
        throw new InvalidInputError(at, `an event name must be 1 to ${maxEventNameLength} characters`);
      }
      const event = requireObject(at, events[name]);
      onlyKeys(at, event, ["description", "properties"]);
      if (event.description !== undefined && typeof event.description !== "string") {
        throw new InvalidInputError(`${at}.description`, "must be a string");
      }
      requireSchema(`${at}.properties`, event.properties);
    }
  }
  for (const [key, inner] of [
    ["identify", "traits"],
    ["group", "traits"],
    ["page", "properties"],
  ] as const) {
    if (plan[key] === undefined) continue;
    const section = requireObject(`${field}.${key}`, plan[key]);
    onlyKeys(`${field}.${key}`, section, [inner]);
    requireSchema(`${field}.${key}.${inner}`, section[inner]);
  }
  return plan as PlanDocument;
}

function requireObject(field: string, value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new InvalidInputError(field, "must be a JSON object");
  return value as Record<string, unknown>;
}

function onlyKeys(field: string, value: Record<string, unknown>, allowed: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key))
      throw new InvalidInputError(`${field}${keySegment(key)}`, `is not expected here (expected ${allowed.join(" or ")})`);
  }
}

function requireSchema(field: string, value: unknown): void {
  if (value === undefined || typeof value === "boolean") return;
  requireObject(field, value);
}

/** The path of the first key or string holding U+0000 (Postgres's text and jsonb refuse it); iterative, for any depth. */
function findNul(root: unknown, field: string): string | undefined {
  const stack: Array<[unknown, string]> = [[root, field]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === "string") {
      if (value.includes("\u0000")) return path;
    } else if (Array.isArray(value)) {
      for (const [index, item] of value.entries()) stack.push([item, `${path}[${index}]`]);
    } else if (value !== null && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) {
        const at = `${path}${keySegment(key)}`;
        if (key.includes("\u0000")) return at;
        stack.push([item, at]);
      }
    }
  }
  return undefined;
}
