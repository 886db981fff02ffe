import type { ErrorObject, ValidateFunction } from "ajv/dist/2020.js";
import { InvalidInputError } from "../errors.js";
import { keySegment, pointerToPath } from "./json-path.js";
import type { JsonSchema, PlanDocument } from "./plan-document.js";
import { plannedShape, type PlannedShape } from "./planned-shape.js";
import { createAjv, readDialect, type Dialect, type PlanAjv } from "./schema-dialect.js";
import { checkSchemaEvaluable } from "./schema-walk.js";

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

/** Values every compiled schema is tried on at save: one that throws on them cannot be evaluated. */
const probeValues: unknown[] = [{}, [], "", 0, null, true];

/**
 * Compiles every schema of the plan with Ajv (JSON Schema draft 2020-12,
 * or draft-07 when its `$schema` says so; the formats of ajv-formats), in
 * Ajv instances of its own so that an old plan's compiled code goes with
 * it. Strict mode stays on for keywords, so a misspelt one (`"tpye"`) is
 * refused, naming where it is. Patterns run on a linear-time engine, and a
 * schema that cannot be evaluated (a `$ref` loop) is refused. Any problem
 * is an InvalidInputError naming its path, never another error.
 */
export function compilePlan(plan: PlanDocument, field = "plan"): CompiledPlan {
  const instances = new Map<Dialect, PlanAjv>();
  const ajvFor = (dialect: Dialect) => {
    let ajv = instances.get(dialect);
    if (!ajv) {
      ajv = createAjv(dialect);
      instances.set(dialect, ajv);
    }
    return ajv;
  };
  const compile = (at: string, given: JsonSchema | undefined): CompiledSchema | undefined => {
    if (given === undefined) return undefined;
    const { dialect, schema } = typeof given === "boolean" ? { dialect: "2020-12" as const, schema: given } : readDialect(at, given);
    const ajv = ajvFor(dialect);
    if (!guard(at, () => ajv.validateSchema(schema)))
      throw new InvalidInputError(schemaErrorPath(at, ajv.errors), schemaErrorText(ajv.errors));
    checkSchemaEvaluable(at, schema);
    const compiled = guard(at, () => ({ validate: ajv.compile(schema), shape: plannedShape(schema) }));
    for (const value of probeValues) guard(at, () => compiled.validate(value), "cannot be evaluated");
    return compiled;
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

/** Runs a step of compiling; whatever it throws becomes an InvalidInputError at `at`. */
function guard<T>(at: string, step: () => T, prefix?: string): T {
  try {
    return step();
  } catch (error) {
    if (error instanceof InvalidInputError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new InvalidInputError(at, prefix ? `${prefix}: ${message}` : message);
  }
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
