import { describe, expect, test } from "vitest";
import { emptyCall } from "../../src/calls/call.js";
import { callFromJson } from "../../src/ingest/call-from-json.js";
import { parseIsoTimestamp } from "../../src/ingest/json-fields.js";

describe("parseIsoTimestamp", () => {
  test.each([
    ["2026-11-22T10:04:05.123Z", "2026-11-22T10:04:05.123Z"],
    ["2026-11-22T10:04:05Z", "2026-11-22T10:04:05.000Z"],
    ["2026-11-22T10:04:05.123456789Z", "2026-11-22T10:04:05.123Z"],
    ["2026-11-22T10:04:05.1Z", "2026-11-22T10:04:05.100Z"],
    ["2026-11-22T12:04:05+02:00", "2026-11-22T10:04:05.000Z"],
    ["2026-11-22T05:04:05-0500", "2026-11-22T10:04:05.000Z"],
    ["2026-11-22T12:04:05+02", "2026-11-22T10:04:05.000Z"],
    ["2026-11-22 10:04:05,5z", "2026-11-22T10:04:05.500Z"],
    ["2026-11-22T10:04", "2026-11-22T10:04:00.000Z"],
    ["2026-11-22T10:04:05", "2026-11-22T10:04:05.000Z"],
    ["2026-11-22", "2026-11-22T00:00:00.000Z"],
    ["2024-02-29T00:00:00Z", "2024-02-29T00:00:00.000Z"],
    ["0050-01-01T00:00:00Z", "0050-01-01T00:00:00.000Z"],
  ])("%s is %s", (text, iso) => {
    expect(parseIsoTimestamp(text)?.toISOString()).toBe(iso);
  });

  test.each([
    "2026-02-29T00:00:00Z",
    "2026-02-30",
    "2026-04-31",
    "2026-13-01",
    "2026-00-10",
    "2026-11-22T24:00:00Z",
    "2026-11-22T23:60:00Z",
    "2026-11-22T23:59:60Z",
    "2026-11-22T10:04:05+24:00",
    "2026-11-22T10:04:05 Z",
    "1",
    "tomorrow",
    "Sun, 22 Nov 2026 10:04:05 GMT",
    "+002026-11-22T10:04:05Z",
    "2026-11-22T10:04:05.Z",
    `2026-11-22T10:04:05.${"1".repeat(100)}Z`,
  ])("%s is refused", (text) => {
    expect(parseIsoTimestamp(text)).toBeUndefined();
  });
});

describe("callFromJson", () => {
  test("reads only the fields of the message's type", () => {
    const parsed = callFromJson(
      { type: "identify", userId: "u", traits: { a: 1 }, properties: "ignored", event: 5, groupId: [], writeKey: "k" },
      undefined,
    );
    expect(parsed.problem).toBeUndefined();
    expect(parsed.call).toMatchObject({ type: "identify", userId: "u", traits: { a: 1 }, properties: undefined, event: "" });
  });

  test("null counts as absent", () => {
    const parsed = callFromJson({ userId: null, anonymousId: "a", event: "E", context: null, timestamp: null }, "track");
    expect(parsed.call).toMatchObject({ userId: "", anonymousId: "a", context: undefined, timestamp: undefined });
  });

  test("the endpoint's type wins over the body's", () => {
    expect(callFromJson({ type: "alias", userId: "u", event: "E" }, "track").call?.type).toBe("track");
  });

  test.each([
    [null, "message", "message must be a JSON object"],
    [[], "message", "message must be a JSON object"],
    [{}, "type", "type is required: one of identify, track, page, screen, group, alias"],
    [{ type: "Track" }, "type", "type must be one of identify, track, page, screen, group, alias"],
    [{ type: 1 }, "type", "type must be one of identify, track, page, screen, group, alias"],
    [{ type: "group", groupId: true }, "groupId", "groupId must be a string (or a number), not a boolean"],
    [{ type: "page", name: {} }, "name", "name must be a string, not an object"],
    [{ type: "identify", traits: [] }, "traits", "traits must be a JSON object, not an array"],
  ])("%j is refused naming %s", (raw, field, reason) => {
    expect(callFromJson(raw).problem).toMatchObject({ field, reason });
  });
});

describe("callFromJson reads each type's own fields (calls/call.ts typeFields)", () => {
  const everything = {
    messageId: "m",
    userId: 7,
    anonymousId: 8,
    event: "E",
    name: "N",
    category: "C",
    groupId: 9,
    previousId: 10,
    properties: { p: 1 },
    traits: { t: 1 },
  };
  const common = { messageId: "m", userId: "7" };
  const absent = {
    anonymousId: "",
    event: "",
    name: "",
    category: "",
    groupId: "",
    previousId: "",
    properties: undefined,
    traits: undefined,
  };
  test.each([
    ["track", { anonymousId: "8", event: "E", properties: { p: 1 } }],
    ["page", { anonymousId: "8", name: "N", category: "C", properties: { p: 1 } }],
    ["screen", { anonymousId: "8", name: "N", properties: { p: 1 } }],
    ["identify", { anonymousId: "8", traits: { t: 1 } }],
    ["group", { anonymousId: "8", groupId: "9", traits: { t: 1 } }],
    ["alias", { previousId: "10" }],
  ] as const)("%s", (type, own) => {
    expect(callFromJson({ ...everything, type }).call).toEqual({ ...emptyCall(type), ...common, ...absent, ...own, sentAt: undefined });
  });
});
