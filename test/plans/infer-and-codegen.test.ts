import { expect, test } from "vitest";
import { generatePlanModule } from "../../src/plans/codegen.js";
import { compilePlan } from "../../src/plans/compile-plan.js";
import { inferPlan } from "../../src/plans/infer-plan.js";
import { readPlanDocument } from "../../src/plans/plan-document.js";
import { schemaType } from "../../src/plans/schema-type.js";

test("infer: types seen (several as a list), required when always present, nested objects, sorted", () => {
  const bodies = [
    { type: "track", event: "B", properties: { n: 1, s: "x", o: { a: 1 } } },
    { type: "track", event: "B", properties: { n: null, o: { a: 2, b: true } } },
    { type: "track", event: "A" },
    { type: "screen", name: "ignored" },
  ].map((b) => JSON.stringify(b));
  const plan = inferPlan(bodies, "test");
  expect(Object.keys(plan.events!)).toEqual(["A", "B"]);
  expect(plan.events!.A!.properties).toEqual({ type: "object", properties: {} });
  expect(plan.events!.B!.properties).toEqual({
    type: "object",
    properties: {
      n: { type: ["null", "number"] },
      o: { type: "object", properties: { a: { type: "number" }, b: { type: "boolean" } }, required: ["a"] },
      s: { type: "string" },
    },
    required: ["n", "o"],
  });
  expect(plan.allowUnplannedEvents).toBe(false);
  // What it infers is a valid plan.
  compilePlan(readPlanDocument(plan));
});

test("schemaType: the TypeScript a schema allows", () => {
  expect(schemaType({ type: "string", enum: ["a", "b"] })).toBe('"a" | "b"');
  expect(schemaType({ type: ["number", "null"] })).toBe("number | null");
  expect(schemaType({ type: "array", items: { type: "integer" } })).toBe("number[]");
  expect(schemaType({ anyOf: [{ type: "string" }, { const: 3 }] })).toBe("string | 3");
  expect(schemaType({ type: "object", properties: { "odd key": { type: "boolean" } }, required: ["odd key"] })).toBe(
    '{\n  "odd key": boolean;\n}',
  );
  expect(schemaType({ type: "object" })).toBe("{\n  [key: string]: unknown;\n}");
});

test("codegen: one function per event, names made unique", () => {
  const source = generatePlanModule({ events: { "order completed": {}, "Order-Completed": {}, "2fa Enabled": {} } });
  expect(source).toContain("export function trackOrderCompleted(");
  expect(source).toContain("export function trackOrderCompleted_(");
  expect(source).toContain("export function track_2faEnabled(");
});

test("infer: keys past the limits are collapsed into additionalProperties, events past the limit left out, and both said", () => {
  const limits = { maxKeysPerObject: 3, maxKeys: 5, maxKeyLength: 10, maxEvents: 2, maxEventNameLength: 200 };
  const bodies = [
    { type: "track", event: "A", properties: { a: 1, b: 2, c: 3, d: "x", e: null } },
    { type: "track", event: "B", properties: { a: 1, b: "y", c: true, ["long".repeat(5)]: 1 } },
    { type: "track", event: "C", properties: { a: 1 } },
  ].map((b) => JSON.stringify(b));
  const plan = inferPlan(bodies, "limited", limits);
  expect(Object.keys(plan.events!)).toEqual(["A", "B"]);
  expect(plan.events!.A!.properties).toMatchObject({
    properties: { a: {}, b: {}, c: {} },
    additionalProperties: { type: ["null", "string"] },
  });
  // Five keys in all: B names two before the plan-wide limit, the rest are collapsed.
  expect(Object.keys((plan.events!.B!.properties as { properties: object }).properties)).toEqual(["a", "b"]);
  expect(plan.events!.B!.properties).toMatchObject({ additionalProperties: { type: ["boolean", "number"] } });
  expect(plan.description).toContain("additionalProperties");
  expect(plan.description).toContain("1 track calls of events past the limit of 2 events");
  compilePlan(readPlanDocument(plan));
});
