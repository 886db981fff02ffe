import { expect, test } from "vitest";
import { emptyCall, type Call, type CallType } from "../../src/calls/call.js";
import { exceedsDepth, validateCall } from "../../src/ingest/validate.js";

const call = (type: CallType, fields: Partial<Call>): Call => ({ ...emptyCall(type), ...fields });

test("identify, track, page, screen and group need userId or anonymousId", () => {
  for (const type of ["identify", "track", "page", "screen", "group"] as const) {
    const problem = validateCall(call(type, { event: "E", groupId: "g" }));
    expect(problem?.field).toBe("userId");
    expect(problem?.message).toContain("anonymousId");
    expect(validateCall(call(type, { anonymousId: "a", event: "E", groupId: "g" }))).toBeUndefined();
  }
});

test("required fields per type are named", () => {
  expect(validateCall(call("track", { userId: "u" }))?.field).toBe("event");
  expect(validateCall(call("group", { userId: "u" }))?.field).toBe("groupId");
  expect(validateCall(call("alias", { previousId: "p" }))?.field).toBe("userId");
  expect(validateCall(call("alias", { userId: "u" }))?.field).toBe("previousId");
});

test("deep nesting is refused, iteratively", () => {
  let deep: Record<string, unknown> = {};
  const root = deep;
  for (let i = 0; i < 100_000; i++) deep = deep.a = {};
  expect(exceedsDepth(root as never, 64)).toBe(true);
  expect(validateCall(call("track", { userId: "u", event: "E", properties: root as never }))?.field).toBe("properties");
});

test("NUL characters and overlong identifiers are refused", () => {
  expect(validateCall(call("track", { userId: "a\0b", event: "E" }))?.field).toBe("userId");
  expect(validateCall(call("track", { userId: "u", event: "x".repeat(2000) }))?.message).toContain("1024");
  expect(validateCall(call("track", { userId: "u", event: "E", messageId: "m".repeat(300) }))?.field).toBe("messageId");
});

test("integrations values must be booleans or option objects", () => {
  expect(validateCall(call("track", { userId: "u", event: "E", integrations: { All: "no" } }))?.field).toBe("integrations.All");
  expect(validateCall(call("track", { userId: "u", event: "E", integrations: { All: false, X: {} } }))).toBeUndefined();
});

test("an invalid timestamp is named", () => {
  expect(validateCall(call("track", { userId: "u", event: "E", timestamp: new Date(Number.NaN) }))?.field).toBe("timestamp");
});
