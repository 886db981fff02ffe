import { expect } from "vitest";
import { type TestReceivers, testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { bodies, deliveredMessageIds, post, storedMessageIds } from "./support.js";

// Each test gets its own source, destination and receiver, so counts are its own.

const test = testWith();

async function setup(server: TestServer, receivers: TestReceivers, name = "hook") {
  const receiver = await receivers.start();
  const source = await server.createSource(name);
  const destination = await server.createDestination({ name, sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  return { receiver, source, destination };
}

const track = (messageId: string, extra: Record<string, unknown> = {}) => ({
  type: "track",
  userId: "u1",
  event: "Semantics",
  messageId,
  ...extra,
});

test("a writeKey field in the body authenticates, and is delivered nowhere", async ({ server, receivers }) => {
  const { receiver, source } = await setup(server, receivers);
  const response = await post(server, "/v1/batch", {
    writeKey: source.writeKey,
    batch: [track("body-key-1", { writeKey: source.writeKey, context: { page: { path: "/" } } })],
  });
  expect(response).toMatchObject({ status: 200, json: { success: true } });
  const single = await post(server, "/v1/track", { ...track("body-key-2"), writeKey: source.writeKey });
  expect(single.status).toBe(200);
  const received = await receiver.waitForRequests(2);
  for (const request of received) expect(request.body).not.toContain(source.writeKey);
  expect(bodies(received).find((b) => b.messageId === "body-key-1").context).toEqual({ page: { path: "/" } });
});

test("a batch's context and integrations are merged into each message; the message's own keys win", async ({ server, receivers }) => {
  const { receiver, source, destination } = await setup(server, receivers, "merge hook");
  const response = await post(
    server,
    "/v1/batch",
    {
      context: { ip: "203.0.113.9", library: { name: "batch-level" } },
      integrations: { Webhooks: false },
      batch: [
        track("merge-1", { context: { library: { name: "own" }, locale: "de-DE" }, integrations: { Webhooks: true } }),
        track("merge-2"),
        track("merge-3", { integrations: { "merge hook": true } }),
      ],
    },
    { writeKey: source.writeKey },
  );
  expect(response).toMatchObject({ status: 200, json: { success: true } });
  // merge-2 inherits Webhooks:false and is stored but routed nowhere.
  expect(await storedMessageIds(server, source.id)).toEqual(["merge-1", "merge-2", "merge-3"]);
  expect((await deliveredMessageIds(server, destination.id)).sort()).toEqual(["merge-1", "merge-3"]);
  const delivered = new Map(bodies(await receiver.waitForRequests(2)).map((b) => [b.messageId, b]));
  expect(delivered.get("merge-1").context).toEqual({ ip: "203.0.113.9", library: { name: "own" }, locale: "de-DE" });
  expect(delivered.get("merge-3").context).toEqual({ ip: "203.0.113.9", library: { name: "batch-level" } });
});

test('integrations {"All": false} stores the call without delivering it', async ({ server, receivers }) => {
  const { receiver, source, destination } = await setup(server, receivers);
  const off = await post(server, "/v1/track", track("all-off", { integrations: { All: false } }), { writeKey: source.writeKey });
  expect(off.status).toBe(200);
  const on = await post(server, "/v1/track", track("all-on"), { writeKey: source.writeKey });
  expect(on.status).toBe(200);
  const [first] = await receiver.waitForRequests(1);
  expect(JSON.parse(first!.body).messageId).toBe("all-on");
  expect(await storedMessageIds(server, source.id)).toEqual(["all-off", "all-on"]);
  expect(await deliveredMessageIds(server, destination.id)).toEqual(["all-on"]);
});

test("a repeated messageId is acknowledged but not delivered again", async ({ server, receivers }) => {
  const { receiver, source, destination } = await setup(server, receivers);
  const first = await post(server, "/v1/batch", { batch: [track("dup-1")] }, { writeKey: source.writeKey });
  expect(first).toMatchObject({ status: 200, json: { success: true } });
  await receiver.waitForRequests(1);
  const again = await post(server, "/v1/batch", { batch: [track("dup-1", { event: "Changed" })] }, { writeKey: source.writeKey });
  expect(again).toMatchObject({ status: 200, json: { success: true } });
  // Within one batch as well.
  const twice = await post(server, "/v1/batch", { batch: [track("dup-2"), track("dup-2")] }, { writeKey: source.writeKey });
  expect(twice).toMatchObject({ status: 200, json: { success: true } });
  const received = await receiver.waitForRequests(2);
  expect(bodies(received).map((b) => b.messageId)).toEqual(["dup-1", "dup-2"]);
  expect(await deliveredMessageIds(server, destination.id)).toEqual(["dup-1", "dup-2"]);
  expect(bodies(received)[0].event).toBe("Semantics");
});

test.for(["text/plain", "application/x-www-form-urlencoded", "application/octet-stream", ""])(
  "JSON sent as Content-Type %j is parsed as JSON",
  async (contentType, { server, receivers }) => {
    const { source } = await setup(server, receivers);
    const messageId = `ctype-${contentType || "none"}`;
    const response = await post(
      server,
      "/v1/batch",
      { batch: [track(messageId)] },
      {
        writeKey: source.writeKey,
        headers: { "content-type": contentType },
      },
    );
    expect(response.status).toBe(200);
    expect(await storedMessageIds(server, source.id)).toEqual([messageId]);
  },
);

test("a batch with some invalid messages stores the valid ones and lists the rest", async ({ server, receivers }) => {
  const { receiver, source } = await setup(server, receivers);
  const oversized = track("too-big", { properties: { blob: "x".repeat(40_000) } });
  const response = await post(
    server,
    "/v1/batch",
    { batch: [track("ok-1"), { userId: "u1", event: "No type" }, oversized, track("ok-2", { userId: "" }), track("ok-3")] },
    { writeKey: source.writeKey },
  );
  expect(response.status).toBe(200);
  expect(response.json).toMatchObject({ success: true, accepted: 2, rejectedCount: 3 });
  expect(response.json.rejected).toEqual([
    { index: 1, field: "type", reason: "type is required: one of identify, track, page, screen, group, alias" },
    { index: 2, field: "message", reason: expect.stringContaining("over the limit of 32768 bytes (32 KB) per call") },
    { index: 3, field: "userId", reason: "userId or anonymousId is required for track" },
  ]);
  expect(await storedMessageIds(server, source.id)).toEqual(["ok-1", "ok-3"]);
  expect(
    bodies(await receiver.waitForRequests(2))
      .map((b) => b.messageId)
      .sort(),
  ).toEqual(["ok-1", "ok-3"]);
});

test("a huge batch of invalid messages lists at most 100 of them", async ({ server, receivers }) => {
  const { source } = await setup(server, receivers);
  const batch = [track("many-ok"), ...Array.from({ length: 2_400 }, () => 0)];
  const response = await post(server, "/v1/batch", { batch }, { writeKey: source.writeKey });
  expect(response.status).toBe(200);
  expect(response.json).toMatchObject({ accepted: 1, rejectedCount: 2_400 });
  expect(response.json.rejected).toHaveLength(100);
  expect(response.json.rejected[0]).toEqual({ index: 1, field: "message", reason: "message must be a JSON object" });
});

test("numeric ids become strings, timestamps with offsets become UTC, SDK extras are ignored", async ({ server, receivers }) => {
  const { receiver, source } = await setup(server, receivers);
  const extras = { sentAt: "2026-11-22T10:00:00Z", _metadata: { nodeVersion: "20" }, channel: "server", version: 2 };
  const calls = [
    ["/v1/track", { ...extras, userId: 42, event: "Numbered", messageId: "num-1", timestamp: "2026-11-22T12:04:05.123+02:00" }],
    ["/v1/group", { ...extras, type: "track", userId: 7, groupId: 1001, messageId: "num-2", originalTimestamp: "x" }],
    ["/v1/alias", { ...extras, userId: 8, previousId: 9, messageId: "num-3", timestamp: "2026-11-22" }],
  ] as const;
  for (const [path, body] of calls) {
    const response = await post(server, path, body, { writeKey: source.writeKey });
    expect(response.status, path).toBe(200);
  }
  const delivered = new Map(bodies(await receiver.waitForRequests(3)).map((b) => [b.messageId, b]));
  expect(delivered.get("num-1")).toMatchObject({ type: "track", userId: "42", timestamp: "2026-11-22T10:04:05.123Z" });
  // The path decides the type, whatever the body's "type" says.
  expect(delivered.get("num-2")).toMatchObject({ type: "group", userId: "7", groupId: "1001" });
  expect(delivered.get("num-3")).toMatchObject({ "Previous ID": "9", "User ID": "8", timestamp: "2026-11-22T00:00:00.000Z" });
  for (const body of delivered.values()) {
    for (const key of ["sentAt", "_metadata", "channel", "originalTimestamp", "writeKey"]) expect(body).not.toHaveProperty(key);
    expect(body.version).toBe(1);
  }
});

test("a call without messageId gets a server-assigned UUID", async ({ server, receivers }) => {
  const { receiver, source } = await setup(server, receivers);
  const response = await post(server, "/v1/track", { userId: "u1", event: "No id" }, { writeKey: source.writeKey });
  expect(response.status).toBe(200);
  const [request] = await receiver.waitForRequests(1);
  expect(JSON.parse(request!.body).messageId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
});
