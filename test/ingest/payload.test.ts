import { describe, expect, test } from "vitest";
import { emptyCall, type Call, type CallType } from "../../src/calls/call.js";
import { buildCallPayload, buildDeletePayload } from "../../src/ingest/payload.js";

const at = new Date("2026-11-22T10:04:05.123Z");

function call(type: CallType, fields: Partial<Call>): Call {
  return { ...emptyCall(type), ...fields };
}

function keys(payload: string): string[] {
  return Object.keys(JSON.parse(payload));
}

describe("webhook body shapes (docs/webhooks.md#the-body)", () => {
  test("track: keys in the documented order, messageId and anonymousId last", () => {
    const body = buildCallPayload(
      call("track", { userId: "u1", anonymousId: "a1", event: "Signed Up", properties: { plan: "pro" }, context: { ip: "1.2.3.4" } }),
      "m1",
      at,
    );
    expect(keys(body)).toEqual(["version", "type", "userId", "event", "properties", "context", "timestamp", "messageId", "anonymousId"]);
    expect(JSON.parse(body)).toEqual({
      version: 1,
      type: "track",
      userId: "u1",
      event: "Signed Up",
      properties: { plan: "pro" },
      context: { ip: "1.2.3.4" },
      timestamp: "2026-11-22T10:04:05.123Z",
      messageId: "m1",
      anonymousId: "a1",
    });
  });

  test("page", () => {
    const body = buildCallPayload(
      call("page", { userId: "u1", name: "Home", category: "Docs", properties: { url: "https://x", extra: 1 } }),
      "m1",
      at,
    );
    expect(keys(body)).toEqual(["version", "type", "userId", "name", "category", "properties", "context", "timestamp", "messageId"]);
  });

  test("screen", () => {
    const body = buildCallPayload(call("screen", { userId: "u1", name: "Main", properties: { a: 1 } }), "m1", at);
    expect(keys(body)).toEqual(["version", "type", "userId", "name", "properties", "context", "timestamp", "messageId"]);
  });

  test("identify", () => {
    const body = buildCallPayload(call("identify", { userId: "u1", traits: { email: "a@b.c" } }), "m1", at);
    expect(keys(body)).toEqual(["version", "type", "userId", "traits", "context", "timestamp", "messageId"]);
  });

  test("group", () => {
    const body = buildCallPayload(call("group", { userId: "u1", groupId: "g1", traits: { n: 1 } }), "m1", at);
    expect(keys(body)).toEqual(["version", "type", "userId", "groupId", "traits", "context", "timestamp", "messageId"]);
  });

  test("alias: spaced keys, no userId key", () => {
    const body = buildCallPayload(call("alias", { userId: "new", previousId: "old" }), "m1", at);
    expect(keys(body)).toEqual(["version", "type", "Previous ID", "User ID", "context", "timestamp", "messageId"]);
    expect(JSON.parse(body)).toMatchObject({ "Previous ID": "old", "User ID": "new" });
    expect(body).not.toContain('"userId"');
  });

  test("delete: exactly type, userId, timestamp", () => {
    expect(buildDeletePayload("u1", at)).toBe('{"type":"delete","userId":"u1","timestamp":"2026-11-22T10:04:05.123Z"}');
  });

  test("absent values are left out, context is always present", () => {
    const body = buildCallPayload(call("track", { anonymousId: "a1", event: "E" }), "m1", at);
    expect(keys(body)).toEqual(["version", "type", "event", "context", "timestamp", "messageId", "anonymousId"]);
    expect(JSON.parse(body).context).toEqual({});
  });

  test("the call's own timestamp wins over the receive time", () => {
    const body = buildCallPayload(call("track", { userId: "u", event: "E", timestamp: new Date("2020-01-02T03:04:05Z") }), "m1", at);
    expect(JSON.parse(body).timestamp).toBe("2020-01-02T03:04:05.000Z");
  });

  test("no whitespace: the body is what JSON.stringify writes", () => {
    const body = buildCallPayload(call("identify", { userId: "u1", traits: { nested: { a: [1, 2] } } }), "m1", at);
    expect(body).toBe(JSON.stringify(JSON.parse(body)));
  });
});
