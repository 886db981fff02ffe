import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { describe, expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { bodies, type PostOptions, post, storedMessageIds } from "./support.js";

const test = testWith();
let source: { id: string; writeKey: string };

test.beforeAll(async ({ server, receiver }) => {
  source = await server.createSource();
  await server.createDestination({ name: "hook", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
});

const track = (userId: string, extra: Record<string, unknown> = {}) => ({ type: "track", userId, event: "Tested", ...extra });

describe("200", () => {
  test("each single-call endpoint, and its one-letter path, stores and delivers its call", async ({ server, receiver }) => {
    const calls: Array<[string, Record<string, unknown>]> = [
      ["/v1/identify", { userId: "s1", traits: { a: 1 } }],
      ["/v1/track", { userId: "s1", event: "E" }],
      ["/v1/page", { userId: "s1", name: "P" }],
      ["/v1/screen", { userId: "s1", name: "S" }],
      ["/v1/group", { userId: "s1", groupId: "g" }],
      ["/v1/alias", { userId: "s1", previousId: "a1" }],
    ];
    const before = receiver.requests.length;
    // The body names no type: the path alone says what the call is.
    for (const [path, body] of calls.flatMap(([path, body]) => [[path, body] as const, [path.slice(0, "/v1/x".length), body] as const])) {
      const response = await post(server, path, body, { writeKey: source.writeKey });
      expect({ path, status: response.status, json: response.json }).toEqual({ path, status: 200, json: { success: true } });
    }
    const delivered = bodies((await receiver.waitForRequests(before + 12)).slice(before));
    const types = ["alias", "group", "identify", "page", "screen", "track"];
    expect(delivered.map((b) => b.type).sort()).toEqual(types.flatMap((type) => [type, type]));
  });

  test("the browser library's short paths and a trailing slash work", async ({ server }) => {
    for (const path of ["/v1/t", "/v1/b", "/v1/batch/"]) {
      const body = path === "/v1/t" ? track("short") : { batch: [track("short")] };
      expect((await post(server, path, body, { writeKey: source.writeKey })).status, path).toBe(200);
    }
  });

  test("an empty batch is a success", async ({ server }) => {
    const response = await post(server, "/v1/batch", { batch: [] }, { writeKey: source.writeKey });
    expect(response).toMatchObject({ status: 200, json: { success: true } });
  });

  test("answers carry CORS headers and a preflight is answered", async ({ server }) => {
    const response = await post(server, "/v1/t", track("cors"), { writeKey: source.writeKey });
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    const preflight = await fetch(`${server.url}/v1/batch`, {
      method: "OPTIONS",
      headers: { origin: "https://app.example.com", "access-control-request-headers": "content-type,x-custom" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");
    expect(preflight.headers.get("access-control-allow-headers")).toBe("content-type,x-custom");
  });
});

describe("400", () => {
  test("malformed JSON", async ({ server }) => {
    const response = await post(server, "/v1/batch", '{"batch":[{"type":"track",', { writeKey: source.writeKey });
    expect(response.status).toBe(400);
    expect(response.json).toMatchObject({ success: false, code: "invalid_json" });
    expect(response.json.message).toContain("not valid JSON");
  });

  test.for([
    ["an empty body", ""],
    ["a JSON array", "[1,2]"],
    ["a JSON string", '"batch"'],
  ])("%s", async ([_name, body], { server }) => {
    const response = await post(server, "/v1/batch", body, { writeKey: source.writeKey });
    expect(response).toMatchObject({ status: 400, json: { success: false, code: "invalid_json" } });
  });

  test.for([
    [{}, "batch is required"],
    [{ batch: { type: "track" } }, "batch must be an array"],
    [{ batch: [], context: "web" }, "context must be a JSON object, not a string"],
    [{ batch: [], integrations: [true] }, "integrations must be a JSON object, not an array"],
  ])("a bad batch envelope %j", async ([body, message], { server }) => {
    const response = await post(server, "/v1/batch", body, { writeKey: source.writeKey });
    expect(response).toMatchObject({ status: 400, json: { success: false, code: "invalid_request" } });
    expect(response.json.message).toContain(message);
  });

  test("an invalid single message names the field", async ({ server }) => {
    const response = await post(server, "/v1/track", { userId: "u1" }, { writeKey: source.writeKey });
    expect(response).toMatchObject({
      status: 400,
      json: { success: false, code: "invalid_message", message: "event: event is required for track" },
    });
  });

  test("a batch whose only message is invalid names batch index and field", async ({ server }) => {
    const response = await post(server, "/v1/batch", { batch: [{ type: "track", event: "E" }] }, { writeKey: source.writeKey });
    expect(response.status).toBe(400);
    expect(response.json).toEqual({
      success: false,
      code: "invalid_message",
      message: "batch[0].userId: userId or anonymousId is required for track",
      rejected: [{ index: 0, field: "userId", reason: "userId or anonymousId is required for track" }],
      rejectedCount: 1,
    });
  });

  test("a batch whose messages are all invalid is a 400 listing each", async ({ server }) => {
    const batch = [{ type: "track", userId: "u" }, { userId: "u", event: "E" }, track("u", { userId: true })];
    const response = await post(server, "/v1/batch", { batch }, { writeKey: source.writeKey });
    expect(response.status).toBe(400);
    expect(response.json.message).toBe("all 3 messages were rejected; the first: batch[0].event: event is required for track");
    expect(response.json.rejected.map((r: { index: number; field: string }) => [r.index, r.field])).toEqual([
      [0, "event"],
      [1, "type"],
      [2, "userId"],
    ]);
  });

  test.for<[Record<string, unknown>, string]>([
    [{ userId: true }, "userId: userId must be a string (or a number), not a boolean"],
    [{ userId: ["u"] }, "userId: userId must be a string (or a number), not an array"],
    [{ anonymousId: {} }, "anonymousId: anonymousId must be a string (or a number), not an object"],
    [{ userId: "u", event: 5 }, "event: event must be a string, not a number"],
    [{ userId: "u", messageId: 7 }, "messageId: messageId must be a string, not a number"],
    [{ userId: "u", properties: [1] }, "properties: properties must be a JSON object, not an array"],
    [{ userId: "u", context: "ctx" }, "context: context must be a JSON object, not a string"],
    [{ userId: "u", integrations: { All: "no" } }, "integrations.All: integrations.All must be a boolean (or an options object)"],
    [{ userId: "u", timestamp: "yesterday" }, 'timestamp: timestamp must be an ISO 8601 date string such as "2026-11-22T10:04:05.123Z"'],
    [{ userId: "u", timestamp: "2026-02-30T10:00:00Z" }, "timestamp: timestamp must be an ISO 8601 date string"],
    [{ userId: "u", timestamp: 1_700_000_000_000 }, "timestamp: timestamp must be an ISO 8601 date string"],
    [{ userId: "u", timestamp: "1969-12-31T23:59:59Z" }, "timestamp: timestamp must be a valid date between years 1970 and 9999"],
  ])("wrong type or value in /v1/track %j", async ([fields, message], { server }) => {
    const response = await post(server, "/v1/track", { event: "E", ...fields }, { writeKey: source.writeKey });
    expect(response.status).toBe(400);
    expect(response.json.code).toBe("invalid_message");
    expect(response.json.message).toContain(message);
  });

  test("nesting deeper than 64 levels is refused; extreme nesting neither crashes nor stalls", async ({ server }) => {
    const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
    const deep = await post(server, "/v1/track", `{"userId":"u","event":"E","properties":{"a":${nested(100)}}}`, {
      writeKey: source.writeKey,
    });
    expect(deep).toMatchObject({ status: 400, json: { message: "properties: properties is nested deeper than 64 levels" } });
    // ~250,000 levels fit in 500 KB; JSON.stringify would overflow the stack on them.
    const extreme = await post(server, "/v1/track", `{"userId":"u","event":"E","context":{"a":${nested(250_000)}}}`, {
      writeKey: source.writeKey,
    });
    expect(extreme).toMatchObject({ status: 400, json: { message: "context: context is nested deeper than 64 levels" } });
    // In a field Waypost ignores, extreme nesting is ignored too.
    const ignored = await post(server, "/v1/track", `{"userId":"u","event":"E","_metadata":${nested(250_000)}}`, {
      writeKey: source.writeKey,
    });
    expect(ignored.status).toBe(200);
  });

  test("corrupt gzip data", async ({ server }) => {
    const response = await post(server, "/v1/batch", Buffer.from("definitely not gzip"), {
      writeKey: source.writeKey,
      headers: { "content-encoding": "gzip" },
    });
    expect(response).toMatchObject({ status: 400, json: { success: false, code: "invalid_encoding" } });
  });

  test("an unsupported Content-Encoding is a 415", async ({ server }) => {
    const response = await post(
      server,
      "/v1/batch",
      { batch: [] },
      {
        writeKey: source.writeKey,
        headers: { "content-encoding": "compress" },
      },
    );
    expect(response).toMatchObject({ status: 415, json: { success: false, code: "unsupported_encoding" } });
  });
});

describe("401", () => {
  test("no key at all", async ({ server }) => {
    const response = await post(server, "/v1/batch", { batch: [track("nokey")] });
    expect(response).toMatchObject({ status: 401, json: { success: false, code: "unauthorized" } });
    expect(response.json.message).toContain("missing write key");
  });

  test.for<[string, PostOptions, Record<string, string>]>([
    ["Basic auth", { writeKey: "wk_not_a_real_key" }, {}],
    ["Bearer", { headers: { authorization: "Bearer wk_not_a_real_key" } }, {}],
    ["a writeKey field", {}, { writeKey: "wk_not_a_real_key" }],
  ])("an unknown key as %s", async ([_name, options, extra], { server }) => {
    const response = await post(server, "/v1/batch", { batch: [track("badkey")], ...extra }, options);
    expect(response).toMatchObject({ status: 401, json: { success: false, code: "unauthorized", message: "unknown write key" } });
  });

  test("a wrong header key is not rescued by a right key in the body", async ({ server }) => {
    const response = await post(
      server,
      "/v1/batch",
      { batch: [track("both")], writeKey: source.writeKey },
      {
        writeKey: "wk_wrong",
      },
    );
    expect(response.status).toBe(401);
  });

  test("nothing is stored for a refused key", async ({ server }) => {
    await post(server, "/v1/batch", { batch: [track("refused", { messageId: "refused-1" })] }, { writeKey: "wk_nope" });
    expect(await storedMessageIds(server, source.id)).not.toContain("refused-1");
  });
});

describe("404 and 405", () => {
  test("an unknown /v1 path is a JSON 404", async ({ server }) => {
    const response = await post(server, "/v1/events", { batch: [] }, { writeKey: source.writeKey });
    expect(response).toMatchObject({ status: 404, json: { success: false, code: "not_found" } });
  });

  test.for(["GET", "PUT", "DELETE"])("%s on an endpoint is a JSON 405", async (method, { server }) => {
    const response = await post(server, "/v1/batch", method === "GET" ? undefined : "{}", { method, writeKey: source.writeKey });
    expect(response).toMatchObject({ status: 405, json: { success: false, code: "method_not_allowed" } });
    expect(response.headers.get("allow")).toBe("POST, OPTIONS");
  });
});

describe("other encodings", () => {
  test.for<[string, (body: Buffer) => Buffer]>([
    ["deflate", deflateSync],
    ["br", brotliCompressSync],
  ])("%s bodies are accepted", async ([encoding, compress], { server }) => {
    const body = compress(Buffer.from(JSON.stringify({ batch: [track(`enc-${encoding}`, { messageId: `enc-${encoding}` })] })));
    const response = await post(server, "/v1/batch", body, {
      writeKey: source.writeKey,
      headers: { "content-encoding": encoding },
    });
    expect(response.status).toBe(200);
    expect(await storedMessageIds(server, source.id)).toContain(`enc-${encoding}`);
  });

  test("gzip with Content-Type application/x-www-form-urlencoded", async ({ server }) => {
    const body = { batch: [track("form", { messageId: "gzip-form-1" })] };
    const response = await post(server, "/v1/batch", body, {
      writeKey: source.writeKey,
      gzip: true,
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(response.status).toBe(200);
    expect(await storedMessageIds(server, source.id)).toContain("gzip-form-1");
  });

  test("gzip is refused when Content-Encoding is missing: the body is parsed as it is", async ({ server }) => {
    const response = await post(server, "/v1/batch", gzipSync(JSON.stringify({ batch: [] })), { writeKey: source.writeKey });
    expect(response).toMatchObject({ status: 400, json: { code: "invalid_json" } });
  });
});
