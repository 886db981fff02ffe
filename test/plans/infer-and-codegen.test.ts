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
