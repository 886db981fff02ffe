import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { InvalidInputError } from "../errors.js";
import { keySegment, pointerToPath } from "./json-path.js";
import type { JsonSchema, PlanDocument } from "./plan-document.js";
import { plannedShape, type PlannedShape } from "./planned-shape.js";

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as unknown as (
  ajv: Ajv2020,
) => void;

/** One schema of the plan, compiled: its validator and the keys it names. */
export interface CompiledSchema {
  validate: ValidateFunction;
  shape: PlannedShape | undefined;
}

/** A plan ready to check calls: every schema compiled once, events by name. */
export interface CompiledPlan {
  allowUnplannedEvents: boolean;
  events: ReadonlyMap<string, CompiledSchema | undefined>;
  identify: CompiledSchema | undefined;
  group: CompiledSchema | undefined;
  page: CompiledSchema | undefined;
}

/**
 * Compiles every schema of the plan with Ajv (JSON Schema draft 2020-12,
 * the formats of ajv-formats), in an Ajv instance of its own so that an
 * old plan's compiled code goes with it. Strict mode stays on for keywords,
 * so a misspelt one (`"tpye"`) is refused, naming where it is. A schema
 * that is not JSON Schema is an InvalidInputError naming its path.
 */
export function compilePlan(plan: PlanDocument, field = "plan"): CompiledPlan {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictTuples: false, strictRequired: false, logger: false });
  addFormats(ajv);
  const compile = (at: string, schema: JsonSchema | undefined): CompiledSchema | undefined => {
    if (schema === undefined) return undefined;
    if (!ajv.validateSchema(schema)) throw new InvalidInputError(schemaErrorPath(at, ajv.errors), schemaErrorText(ajv.errors));
    try {
      return { validate: ajv.compile(schema), shape: plannedShape(schema) };
    } catch (error) {
      throw new InvalidInputError(at, error instanceof Error ? error.message : String(error));
    }
  };
  const events = new Map<string, CompiledSchema | undefined>();
  for (const [name, event] of Object.entries(plan.events ?? {})) {
    events.set(name, compile(`${field}.events${keySegment(name)}.properties`, event.properties));
  }
  return {
    allowUnplannedEvents: plan.allowUnplannedEvents ?? true,
    events,
    identify: compile(`${field}.identify.traits`, plan.identify?.traits),
    group: compile(`${field}.group.traits`, plan.group?.traits),
    page: compile(`${field}.page.properties`, plan.page?.properties),
  };
}

function schemaErrorPath(at: string, errors: ErrorObject[] | null | undefined): string {
  const first = errors?.[0];
  return first ? pointerToPath(at, first.instancePath) : at;
}

function schemaErrorText(errors: ErrorObject[] | null | undefined): string {
  const first = errors?.[0];
  if (!first) return "is not a valid JSON Schema";
  const allowed = (first.params as { allowedValues?: unknown[] }).allowedValues;
  const detail = allowed
    ? ` (${allowed
        .slice(0, 10)
        .map((v) => JSON.stringify(v))
        .join(", ")})`
    : "";
  return `is not a valid JSON Schema: ${first.message ?? "invalid"}${detail}`;
}
