import type { JsonObject } from "@bufbuild/protobuf";
import type { ErrorObject } from "ajv/dist/2020.js";
import { unknownCallType, type Call } from "../calls/call.js";
import type { ViolationKindName } from "../db/queries/plan-violations.js";
import type { CompiledPlan, CompiledSchema } from "./compile-plan.js";
import { exampleText, keySegment, pointerToPath } from "./json-path.js";
import { findUnplanned, type UnplannedKey } from "./planned-shape.js";

/** One problem a call has with the plan. */
export interface Violation {
  callType: string;
  /** The track event's name; "" for identify, group and page. */
  event: string;
  /** Where: `properties.total`, `traits.plan`, `event`. */
  path: string;
  kind: ViolationKindName;
  /** What is wrong, e.g. "must be number". */
  message: string;
  /** The offending value as JSON, at most 200 characters ("" when absent). */
  example: string;
}

export interface CallCheck {
  violations: Violation[];
  /** The call to deliver: the same one, or (when stripping) a copy without the unplanned keys. */
  call: Call;
}

/** A call with hundreds of problems is recorded by its first ones. */
const maxViolationsPerCall = 20;

/**
 * Checks one call against a compiled plan. Track calls are checked by
 * event; identify and group by their traits, page by its properties;
 * screen and alias are not part of a plan. With `strip`, the call returned
 * has no properties/traits the plan does not name.
 */
export function checkCall(plan: CompiledPlan, call: Call, strip: boolean): CallCheck {
  switch (call.type) {
    case "track": {
      if (!plan.events.has(call.event)) {
        if (plan.allowUnplannedEvents) return { violations: [], call };
        return {
          violations: [
            {
              callType: "track",
              event: call.event,
              path: "event",
              kind: "unplanned_event",
              message: "is not an event of the plan",
              example: exampleText(call.event),
            },
          ],
          call,
        };
      }
      return checkObject(plan.events.get(call.event), call, "properties", call.event, strip);
    }
    case "page":
      return checkObject(plan.page, call, "properties", "", strip);
    case "identify":
      return checkObject(plan.identify, call, "traits", "", strip);
    case "group":
      return checkObject(plan.group, call, "traits", "", strip);
    case "screen":
    case "alias":
      return { violations: [], call };
    default:
      return unknownCallType(call.type);
  }
}

function checkObject(
  schema: CompiledSchema | undefined,
  call: Call,
  root: "properties" | "traits",
  event: string,
  strip: boolean,
): CallCheck {
  if (!schema) return { violations: [], call };
  const value = readObject(call, root);
  const violations: Violation[] = [];
  const seen = new Set<string>();
  const add = (path: string, kind: ViolationKindName, message: string, example: unknown) => {
    const key = `${kind}\u0000${path}`;
    if (seen.has(key) || violations.length >= maxViolationsPerCall) return;
    seen.add(key);
    violations.push({ callType: call.type, event, path, kind, message, example: exampleText(example) });
  };
  let kept = value;
  try {
    if (!schema.validate(value)) {
      for (const error of schema.validate.errors ?? []) addAjvError(add, root, value, error);
    }
    if (schema.shape) {
      const unplanned: UnplannedKey[] = [];
      kept = findUnplanned(value, schema.shape, root, strip, unplanned);
      for (const key of unplanned) add(key.path, "unplanned_property", "is not in the plan", key.value);
    }
  } catch (error) {
    // A value the schema cannot be evaluated on (nesting deep enough to
    // overflow the stack through a recursive schema...) is a violation of
    // the plan, so the call gets the mode's answer and never a failed request.
    const reason = error instanceof Error ? error.message : String(error);
    add(root, "other", `could not be checked against the plan (${reason})`, undefined);
    kept = value;
  }
  if (!strip || kept === value) return { violations, call };
  const structJson = call.structJson ? { ...call.structJson } : undefined;
  if (structJson) delete structJson[root];
  return { violations, call: { ...call, [root]: kept as JsonObject, structJson } };
}

/** The call's properties or traits as an object ({} when absent), parsing the JSON text read from the wire. */
function readObject(call: Call, root: "properties" | "traits"): Record<string, unknown> {
  const object = call[root];
  if (object) return object;
  const text = call.structJson?.[root];
  return text === undefined ? {} : (JSON.parse(text) as Record<string, unknown>);
}

type Add = (path: string, kind: ViolationKindName, message: string, example: unknown) => void;

function addAjvError(add: Add, root: string, value: unknown, error: ErrorObject): void {
  const at = pointerToPath(root, error.instancePath);
  const params = error.params as { missingProperty?: string; additionalProperty?: string; unevaluatedProperty?: string };
  switch (error.keyword) {
    case "required":
      add(`${at}${keySegment(params.missingProperty ?? "")}`, "required_missing", "is required", undefined);
      return;
    case "type":
      add(at, "wrong_type", error.message ?? "has the wrong type", valueAt(value, error.instancePath));
      return;
    case "additionalProperties":
    case "unevaluatedProperties": {
      const key = params.additionalProperty ?? params.unevaluatedProperty ?? "";
      add(`${at}${keySegment(key)}`, "unplanned_property", "is not in the plan", valueAt(value, `${error.instancePath}/${key}`));
      return;
    }
    default:
      add(at, "other", error.message ?? "is not valid", valueAt(value, error.instancePath));
  }
}

function valueAt(root: unknown, pointer: string): unknown {
  if (pointer === "") return root;
  let node = root;
  for (const raw of pointer.slice(1).split("/")) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[raw.replace(/~1/g, "/").replace(/~0/g, "~")];
  }
  return node;
}
