import { describe, expect, it } from "vitest";
import { InvalidCallError } from "../../packages/client/src/errors.js";
import { callLimits, prepareCall, utf8Length } from "../../packages/client/src/validate-call.js";

const id = () => "generated-id";

function refusal(fn: () => unknown): InvalidCallError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidCallError);
    return error as InvalidCallError;
  }
  throw new Error("expected the call to be refused");
}

describe("prepareCall: the server's rules, checked when the call is made", () => {
  it.each([
    ["identify", {}],
    ["track", { event: "E" }],
    ["page", {}],
    ["screen", {}],
    ["group", { groupId: "g" }],
  ] as const)("%s needs userId or anonymousId", (type, call) => {
    const error = refusal(() => prepareCall(type, call as never, id));
    expect(error.field).toBe("userId");
    expect(error.message).toContain("userId or anonymousId is required");
    expect(() => prepareCall(type, { ...call, anonymousId: "a" } as never, id)).not.toThrow();
  });

  it("track needs event, group needs groupId", () => {
    expect(refusal(() => prepareCall("track", { userId: "u" } as never, id)).field).toBe("event");
    expect(refusal(() => prepareCall("group", { userId: "u" } as never, id)).field).toBe("groupId");
  });

  it("alias needs userId and previousId (anonymousId does not count)", () => {
    expect(refusal(() => prepareCall("alias", { previousId: "p" } as never, id)).field).toBe("userId");
    expect(refusal(() => prepareCall("alias", { userId: "u" } as never, id)).field).toBe("previousId");
    expect(() => prepareCall("alias", { userId: "u", previousId: "p" }, id)).not.toThrow();
  });

  it("names fields of the wrong type", () => {
    expect(refusal(() => prepareCall("track", { userId: 42, event: "E" } as never, id)).field).toBe("userId");
    expect(refusal(() => prepareCall("track", { userId: "u", event: "E", properties: [1] } as never, id)).field).toBe("properties");
    expect(refusal(() => prepareCall("track", { userId: "u", event: "E", context: "x" } as never, id)).field).toBe("context");
    expect(refusal(() => prepareCall("track", { userId: "u", event: "E", integrations: { All: "no" } } as never, id)).field).toBe(
      "integrations.All",
    );
    expect(refusal(() => prepareCall("track", { userId: "u", event: "E", timestamp: "yesterday" }, id)).field).toBe("timestamp");
    expect(refusal(() => prepareCall("track", null as never, id)).field).toBe("call");
  });

  it("refuses what JSON cannot encode, naming the call", () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const error = refusal(() => prepareCall("track", { userId: "u", event: "E", properties: circular }, id));
    expect(error.message).toMatch(/cannot be encoded as JSON/);
    expect(refusal(() => prepareCall("track", { userId: "u", event: "E", properties: { n: 1n } }, id)).field).toBe("message");
  });

  it("generates a messageId when absent and keeps a given one", () => {
    expect(prepareCall("track", { userId: "u", event: "E" }, id).messageId).toBe("generated-id");
    expect(prepareCall("track", { userId: "u", event: "E", messageId: "m1" }, id).messageId).toBe("m1");
  });

  it("encodes Connect JSON with only the fields of the call's type, timestamps as UTC ISO", () => {
    const prepared = prepareCall(
      "alias",
      { userId: "u", previousId: "p", anonymousId: "ignored", timestamp: new Date(Date.UTC(2024, 0, 2)) } as never,
      id,
    );
    expect(JSON.parse(prepared.json)).toEqual({
      messageId: "generated-id",
      userId: "u",
      previousId: "p",
      timestamp: "2024-01-02T00:00:00.000Z",
    });
    expect(JSON.parse(prepareCall("page", { userId: "u", timestamp: "2024-01-02T03:04:05+02:00" }, id).json).timestamp).toBe(
      "2024-01-02T01:04:05.000Z",
    );
  });

  it("snapshots the call: later changes to the caller's object do not leak in", () => {
    const properties: Record<string, unknown> = { plan: "free" };
    const prepared = prepareCall("track", { userId: "u", event: "E", properties }, id);
    properties.plan = "pro";
    expect(JSON.parse(prepared.json).properties).toEqual({ plan: "free" });
  });

  it("refuses a call over 32 KB with an error naming the limit, and takes one just under it", () => {
    const big = prepareCall("track", { userId: "u", event: "E", properties: { blob: "" } }, id);
    const room = callLimits.maxCallBytes - 96 - big.bytes;
    expect(() => prepareCall("track", { userId: "u", event: "E", properties: { blob: "x".repeat(room) } }, id)).not.toThrow();
    const error = refusal(() => prepareCall("track", { userId: "u", event: "E", properties: { blob: "x".repeat(room + 1) } }, id));
    expect(error.field).toBe("message");
    expect(error.message).toContain("32768 bytes (32 KB)");
  });

  it("counts multi-byte characters as UTF-8", () => {
    expect(utf8Length("aé€😀")).toBe(1 + 2 + 3 + 4);
    expect(utf8Length("😀".repeat(3))).toBe(12);
    const error = refusal(() => prepareCall("track", { userId: "u", event: "E", properties: { s: "€".repeat(11_000) } }, id));
    expect(error.field).toBe("message");
  });
});

describe("options", () => {
  it("names the option that is wrong", async () => {
    const { Analytics } = await import("../../packages/client/src/index.js");
    expect(() => new Analytics({ writeKey: "", endpoint: "http://x" })).toThrow(/options.writeKey is required/);
    expect(() => new Analytics({ writeKey: "k", endpoint: "x" })).toThrow(/options.endpoint must be an absolute/);
    expect(() => new Analytics({ writeKey: "k", endpoint: "ftp://x" })).toThrow(/options.endpoint must use http or https/);
    expect(() => new Analytics({ writeKey: "k", endpoint: "http://x", flushAt: 0 })).toThrow(
      /options.flushAt must be an integer of at least 1/,
    );
    expect(() => new Analytics({ writeKey: "k", endpoint: "http://x", httpVersion: "3" as never })).toThrow(/options.httpVersion/);
  });
});
