import { describe, expect, test } from "vitest";
import { emptyCall, type Call } from "../../src/calls/call.js";
import { InvalidInputError } from "../../src/errors.js";
import { checkCall } from "../../src/plans/check-call.js";
import { compilePlan } from "../../src/plans/compile-plan.js";
import { readPlanDocument } from "../../src/plans/plan-document.js";

function planOf(properties: unknown) {
  return readPlanDocument({ events: { E: { properties } } });
}

function refusal(properties: unknown): InvalidInputError {
  try {
    compilePlan(planOf(properties));
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as InvalidInputError;
  }
  throw new Error("the plan was accepted");
}

function track(properties: Record<string, unknown>): Call {
  return { ...emptyCall("track"), userId: "u1", event: "E", properties: properties as Call["properties"] };
}

describe("patterns run in linear time", () => {
  test("a catastrophic-backtracking pattern answers at once on the value that would stall a backtracking engine", () => {
    const plan = compilePlan(planOf({ type: "object", properties: { name: { type: "string", pattern: "^(a+)+$" } } }));
    // 40 characters: a backtracking engine would try about 2^40 ways; the linear one reads them once.
    const hostile = `${"a".repeat(40)}!`;
    const checked = checkCall(plan, track({ name: hostile }), false);
    expect(checked.violations).toEqual([
      expect.objectContaining({ path: "properties.name", kind: "other", message: 'must match pattern "^(a+)+$"' }),
    ]);
    expect(checkCall(plan, track({ name: "aaaa" }), false).violations).toEqual([]);
  });

  test("patternProperties keys also run on the linear engine, in Ajv and in the unplanned-key walk", () => {
    const plan = compilePlan(planOf({ type: "object", patternProperties: { "^(x+)+$": { type: "number" } }, additionalProperties: false }));
    const hostile = `${"x".repeat(40)}!`;
    const checked = checkCall(plan, track({ xxx: 1, [hostile]: 1 }), true);
    expect(checked.violations.map((v) => [v.path, v.kind])).toEqual([[`properties[${JSON.stringify(hostile)}]`, "unplanned_property"]]);
    expect(checked.call.properties).toEqual({ xxx: 1 });
  });

  test("ECMA-262 \\u escapes and common classes keep working", () => {
    const plan = compilePlan(planOf({ type: "object", properties: { s: { type: "string", pattern: "^[\\u0041-\\u005A]+\\d{2}$" } } }));
    expect(checkCall(plan, track({ s: "AB12" }), false).violations).toEqual([]);
    expect(checkCall(plan, track({ s: "ab12" }), false).violations).toHaveLength(1);
  });

  test.each([
    ["a backreference", "^(a)\\1$"],
    ["a lookahead", "^(?=a)a$"],
    ["a negative lookahead", "^(?!b)a$"],
    ["a lookbehind", "(?<=a)b"],
  ])("%s is refused at save, naming the path and the keyword", (_what, pattern) => {
    const error = refusal({ type: "object", properties: { code: { type: "string", pattern } } });
    expect(error.field).toBe("plan.events.E.properties.properties.code.pattern");
    expect(error.message).toContain("cannot be matched in linear time");
    const key = refusal({ type: "object", patternProperties: { [pattern]: {} } });
    expect(key.field).toBe(`plan.events.E.properties.patternProperties[${JSON.stringify(pattern)}]`);
  });
});

describe("uniqueItems", () => {
  test("finds duplicates as JSON Schema defines them (object key order and 1 vs 1.0 do not matter)", () => {
    const plan = compilePlan(planOf({ type: "object", properties: { tags: { type: "array", uniqueItems: true } } }));
    expect(
      checkCall(
        plan,
        track({
          tags: [
            { a: 1, b: [2] },
            { b: [2], a: 1.0 },
          ],
        }),
        false,
      ).violations,
    ).toEqual([
      expect.objectContaining({
        path: "properties.tags",
        kind: "other",
        message: "must NOT have duplicate items (items ## 1 and 0 are identical)",
      }),
    ]);
    expect(checkCall(plan, track({ tags: [{ a: 1 }, { a: 2 }, [1], "1", 1] }), false).violations).toEqual([]);
  });

  test("40,000 distinct arrays are checked with linear work, not a comparison of every pair", () => {
    const plan = compilePlan(planOf({ type: "object", properties: { tags: { type: "array", uniqueItems: true } } }));
    const tags = Array.from({ length: 40_000 }, (_, i) => [i]);
    const started = performance.now();
    expect(checkCall(plan, track({ tags }), false).violations).toEqual([]);
    // Pairwise comparison is 800 million deep-equal calls (many seconds); the hashed check is tens of milliseconds.
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe("schemas that cannot be evaluated", () => {
  test.each([
    ["the root referring to itself", { $ref: "#" }, "plan.events.E.properties.$ref"],
    [
      "a loop through $defs",
      { $ref: "#/$defs/a", $defs: { a: { $ref: "#/$defs/b" }, b: { allOf: [{ $ref: "#/$defs/a" }] } } },
      "plan.events.E.properties.$defs.a.$ref",
    ],
    [
      "a loop through an anchor under a property",
      { type: "object", properties: { p: { $anchor: "p", anyOf: [{ type: "string" }, { $ref: "#p" }] } } },
      "plan.events.E.properties.properties.p.anyOf[1].$ref",
    ],
    [
      "a loop through an $id under a property",
      { type: "object", properties: { a: { $id: "https://example.com/a", $ref: "https://example.com/a" } } },
      "plan.events.E.properties.properties.a.$ref",
    ],
    [
      "a loop through a relative $id",
      { $id: "https://example.com/s", $defs: { b: { $id: "b", allOf: [{ $ref: "b#" }] } }, $ref: "b" },
      "plan.events.E.properties.$defs.b.allOf[0].$ref",
    ],
  ])("%s is refused at save", (_what, schema, path) => {
    const error = refusal(schema);
    expect(error.field).toBe(path);
    expect(error.message).toContain("$ref loop");
  });

  test("a recursive schema that moves into the value each turn is accepted and checks nested values", () => {
    const tree = { type: "object", properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#" } } } };
    const plan = compilePlan(planOf(tree));
    expect(checkCall(plan, track({ name: "a", children: [{ name: "b", children: [] }] }), false).violations).toEqual([]);
    expect(checkCall(plan, track({ name: "a", children: [{ name: 2 }] }), false).violations).toEqual([
      expect.objectContaining({ path: "properties.children[0].name", kind: "wrong_type" }),
    ]);
  });

  test("references through $id that move into the value are accepted", () => {
    const list = {
      $id: "https://example.com/list",
      $defs: { node: { $id: "node", type: "object", properties: { value: { type: "number" }, next: { $ref: "node" } } } },
      $ref: "node",
    };
    const plan = compilePlan(planOf(list));
    expect(checkCall(plan, track({ value: 1, next: { value: 2, next: { value: "3" } } }), false).violations).toEqual([
      expect.objectContaining({ path: "properties.next.next.value", kind: "wrong_type" }),
    ]);
  });

  test("a value the validator throws on is a violation of kind other, not an exception", () => {
    const plan = compilePlan(planOf({ type: "object", properties: { a: { $ref: "#" } } }));
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 100_000; i += 1) deep = { a: deep };
    const checked = checkCall(plan, track(deep), false);
    expect(checked.violations).toEqual([
      expect.objectContaining({
        path: "properties",
        kind: "other",
        message: expect.stringContaining("could not be checked against the plan"),
      }),
    ]);
  });
});

describe("JSON Schema dialects", () => {
  test("draft-07 is accepted and validated as draft-07 (items as a list, definitions)", () => {
    const plan = compilePlan(
      planOf({
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        definitions: { id: { type: "string", minLength: 2 } },
        properties: { id: { $ref: "#/definitions/id" }, pair: { type: "array", items: [{ type: "string" }, { type: "number" }] } },
        required: ["id"],
      }),
    );
    expect(checkCall(plan, track({ id: "ab", pair: ["x", 1] }), false).violations).toEqual([]);
    expect(checkCall(plan, track({ id: "a", pair: [1, 1] }), false).violations.map((v) => v.path)).toEqual([
      "properties.id",
      "properties.pair[0]",
    ]);
  });

  test("2020-12 named explicitly is accepted, and so is a draft-07 id without its '#'", () => {
    expect(() => compilePlan(planOf({ $schema: "https://json-schema.org/draft/2020-12/schema", type: "object" }))).not.toThrow();
    expect(() => compilePlan(planOf({ $schema: "http://json-schema.org/draft-07/schema", type: "object" }))).not.toThrow();
  });

  test.each([
    ["draft-04", "http://json-schema.org/draft-04/schema#"],
    ["2019-09", "https://json-schema.org/draft/2019-09/schema"],
    ["anything else", "https://example.com/my-schema"],
  ])("%s is invalid_argument naming $schema", (_what, $schema) => {
    const error = refusal({ $schema, type: "object" });
    expect(error.field).toBe("plan.events.E.properties.$schema");
    expect(error.message).toContain("is not a JSON Schema dialect plans support");
  });

  test("a Snowplow Iglu schema is refused naming self", () => {
    const error = refusal({
      $schema: "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#",
      self: { vendor: "com.acme", name: "checkout", format: "jsonschema", version: "1-0-0" },
      type: "object",
      properties: { total: { type: "number" } },
    });
    expect(error.field).toBe("plan.events.E.properties.self");
    expect(error.message).toContain("Snowplow Iglu");
  });
});
