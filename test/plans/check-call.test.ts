import { describe, expect, test } from "vitest";
import { emptyCall, type Call } from "../../src/calls/call.js";
import { checkCall } from "../../src/plans/check-call.js";
import { compilePlan } from "../../src/plans/compile-plan.js";
import { readPlanDocument } from "../../src/plans/plan-document.js";
import { checkoutPlan } from "./fixtures.js";

const plan = compilePlan(readPlanDocument(checkoutPlan));

function track(event: string, properties: Record<string, unknown> | undefined): Call {
  return { ...emptyCall("track"), userId: "u1", event, properties: properties as Call["properties"] };
}

describe("checkCall", () => {
  test("a call that satisfies the plan has no violations and is returned as it is", () => {
    const call = track("Order Completed", { total: 1, currency: "USD", coupon: "X" });
    const result = checkCall(plan, call, true);
    expect(result.violations).toEqual([]);
    expect(result.call).toBe(call);
  });

  test("properties read from the wire as JSON text are checked, and stripped from the text too", () => {
    const call = { ...track("Order Completed", undefined), structJson: { properties: '{"total":"1","currency":"EUR","x":1}' } };
    const result = checkCall(plan, call, true);
    expect(result.violations.map((v) => [v.path, v.kind])).toEqual([
      ["properties.total", "wrong_type"],
      ["properties.x", "unplanned_property"],
    ]);
    expect(result.call.properties).toEqual({ total: "1", currency: "EUR" });
    expect(result.call.structJson?.properties).toBeUndefined();
  });

  test("nested unplanned keys are found and stripped where the schema describes the object", () => {
    const nested = compilePlan(
      readPlanDocument({
        events: { E: { properties: { type: "object", properties: { cart: { type: "object", properties: { id: { type: "string" } } } } } } },
      }),
    );
    const result = checkCall(nested, track("E", { cart: { id: "c", secret: 1 } }), true);
    expect(result.violations.map((v) => v.path)).toEqual(["properties.cart.secret"]);
    expect(result.call.properties).toEqual({ cart: { id: "c" } });
  });

  test("additionalProperties true, patternProperties and schema-less events let other keys in", () => {
    const open = compilePlan(
      readPlanDocument({
        events: {
          Open: { properties: { type: "object", properties: { a: { type: "string" } }, additionalProperties: true } },
          Pattern: { properties: { type: "object", properties: {}, patternProperties: { "^x_": { type: "number" } } } },
          Free: {},
        },
      }),
    );
    expect(checkCall(open, track("Open", { a: "1", b: 2 }), false).violations).toEqual([]);
    expect(checkCall(open, track("Pattern", { x_1: 1 }), false).violations).toEqual([]);
    expect(checkCall(open, track("Pattern", { y: 1 }), false).violations.map((v) => v.kind)).toEqual(["unplanned_property"]);
    expect(checkCall(open, track("Free", { anything: [1] }), false).violations).toEqual([]);
    // allowUnplannedEvents defaults to true.
    expect(checkCall(open, track("Elsewhere", {}), false).violations).toEqual([]);
  });

  test("screen and alias calls are not checked; formats are (ajv-formats)", () => {
    expect(checkCall(plan, { ...emptyCall("screen"), userId: "u", name: "S", properties: { x: 1 } }, false).violations).toEqual([]);
    const identify = { ...emptyCall("identify"), userId: "u", traits: { email: "not an email" } };
    expect(checkCall(plan, identify, false).violations).toEqual([
      expect.objectContaining({
        callType: "identify",
        event: "",
        path: "traits.email",
        kind: "other",
        message: 'must match format "email"',
      }),
    ]);
  });
});
