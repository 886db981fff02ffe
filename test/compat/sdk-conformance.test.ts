import RudderAnalytics from "@rudderstack/rudder-sdk-node";
import { Analytics as SegmentAnalytics } from "@segment/analytics-node";
import { afterEach, expect } from "vitest";
import type { RouteHandler } from "../../src/http/types.js";
import { type TestReceivers, testWith } from "../helpers/fixtures.js";
import type { ReceivedRequest } from "../helpers/receiver.js";
import type { TestServer } from "../helpers/server.js";
import { bodies, expectedKeys } from "./support.js";

// Real SDKs, unchanged except for their host, against a running Waypost; the
// calls must arrive at a real webhook receiver in the bodies of docs/webhooks.md.

/** What reached the compatible API (a spy route in front of it). */
let seen: Array<{ path: string; contentType: string; contentEncoding: string; authorization: boolean }> = [];

const spy: RouteHandler = async (req, _res, path) => {
  if (!path.startsWith("/v1")) return false;
  seen.push({
    path,
    contentType: String(req.headers["content-type"] ?? ""),
    contentEncoding: String(req.headers["content-encoding"] ?? ""),
    authorization: typeof req.headers.authorization === "string",
  });
  return false;
};
const test = testWith({ server: { routes: (defaults) => [spy, ...defaults] } });
afterEach(() => {
  seen = [];
});

async function setup(server: TestServer, receivers: TestReceivers, name: string) {
  const receiver = await receivers.start();
  const source = await server.createSource(name);
  await server.createDestination({ name: `${name} hook`, sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  return { receiver, source };
}

const importedAt = "2026-11-22T10:04:05.123Z";

/** The six calls each SDK makes, and the optional keys each one sets. */
function sixCalls(userId: string) {
  return {
    identify: { userId, traits: { email: "ada@example.com", plan: "pro" } },
    track: {
      userId,
      anonymousId: "anon-1",
      event: "Signed Up",
      properties: { plan: "pro", seats: 3 },
      timestamp: new Date(importedAt),
    },
    page: { userId, name: "Pricing", category: "Docs", properties: { url: "https://example.com/pricing", path: "/pricing" } },
    screen: { userId, name: "Settings", properties: { tab: "billing" } },
    group: { userId, groupId: "acme", traits: { name: "Acme Inc" } },
    alias: { userId, previousId: "anon-1" },
  };
}

const optionalKeys: Record<string, string[]> = {
  identify: ["userId", "traits"],
  track: ["userId", "event", "properties", "anonymousId"],
  page: ["userId", "name", "category", "properties"],
  screen: ["userId", "name", "properties"],
  group: ["userId", "groupId", "traits"],
  alias: [],
};

/** Checks the six delivered bodies against docs/webhooks.md and the calls sent. */
function expectSpecBodies(received: ReceivedRequest[], writeKey: string, userId: string, library: string) {
  const calls = sixCalls(userId);
  const byType = new Map(bodies(received).map((body) => [body.type as string, body]));
  expect([...byType.keys()].sort()).toEqual(["alias", "group", "identify", "page", "screen", "track"]);
  for (const [type, body] of byType) {
    expect(Object.keys(body), type).toEqual(expectedKeys(type, optionalKeys[type]!));
    expect(body.version).toBe(1);
    expect(typeof body.messageId).toBe("string");
    expect(body.messageId.length).toBeGreaterThan(0);
    expect(body.context.library.name, `${type} context is forwarded`).toBe(library);
    expect(body.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  }
  expect(new Set([...byType.values()].map((b) => b.messageId)).size).toBe(6);
  expect(byType.get("identify")).toMatchObject({ userId, traits: calls.identify.traits });
  expect(byType.get("track")).toMatchObject({
    userId,
    anonymousId: "anon-1",
    event: "Signed Up",
    properties: calls.track.properties,
    timestamp: importedAt,
  });
  expect(byType.get("page")).toMatchObject({ userId, name: "Pricing", category: "Docs", properties: calls.page.properties });
  expect(byType.get("screen")).toMatchObject({ userId, name: "Settings", properties: calls.screen.properties });
  expect(byType.get("group")).toMatchObject({ userId, groupId: "acme", traits: calls.group.traits });
  const alias = byType.get("alias");
  expect(alias["Previous ID"]).toBe("anon-1");
  expect(alias["User ID"]).toBe(userId);
  expect(alias).not.toHaveProperty("userId");
  for (const request of received) {
    expect(request.body).not.toContain(writeKey);
    expect(JSON.stringify(request.headers)).not.toContain(writeKey);
  }
}

test.for([{ flushAt: 1 }, { flushAt: 20 }])(
  "@segment/analytics-node (flushAt $flushAt) sends all six calls",
  async ({ flushAt }, { server, receivers }) => {
    const { receiver, source } = await setup(server, receivers, `segment ${flushAt}`);
    const analytics = new SegmentAnalytics({ writeKey: source.writeKey, host: server.url, flushAt, maxRetries: 0 });
    const statuses: number[] = [];
    const errors: unknown[] = [];
    analytics.on("http_response", (response) => statuses.push(response.status));
    analytics.on("error", (error) => errors.push(error));
    const userId = `segment-user-${flushAt}`;
    const calls = sixCalls(userId);
    analytics.identify(calls.identify);
    analytics.track(calls.track);
    analytics.page(calls.page);
    analytics.screen(calls.screen);
    analytics.group(calls.group);
    analytics.alias(calls.alias);
    await analytics.closeAndFlush();

    expect(errors).toEqual([]);
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.every((status) => status === 200)).toBe(true);
    expect(seen.every((s) => s.path === "/v1/batch" && s.authorization)).toBe(true);
    if (flushAt === 1) expect(seen).toHaveLength(6);
    const received = await receiver.waitForRequests(6);
    expectSpecBodies(received, source.writeKey, userId, "@segment/analytics-node");
  },
);

test.for([
  { gzip: true, contentEncoding: "gzip" },
  { gzip: false, contentEncoding: "" },
])("@rudderstack/rudder-sdk-node (gzip $gzip) sends all six calls", async ({ gzip, contentEncoding }, { server, receivers }) => {
  const { receiver, source } = await setup(server, receivers, `rudder ${gzip}`);
  const analytics = new RudderAnalytics(source.writeKey, {
    dataPlaneUrl: server.url,
    gzip,
    logLevel: "none",
    retryCount: 0,
    flushInterval: 60_000,
  });
  const userId = `rudder-user-${gzip}`;
  const calls = sixCalls(userId);
  // Each call's callback reports its batch's outcome (the typings omit the error argument).
  const sent = (send: (done: () => void) => unknown) =>
    new Promise<void>((resolve, reject) => send(((error?: Error) => (error ? reject(error) : resolve())) as () => void));
  const outcomes = [
    sent((done) => analytics.identify(calls.identify, done)),
    sent((done) => analytics.track(calls.track, done)),
    sent((done) => analytics.page(calls.page, done)),
    sent((done) => analytics.screen(calls.screen, done)),
    sent((done) => analytics.group(calls.group, done)),
    sent((done) => analytics.alias(calls.alias, done)),
  ];
  // The first call is sent at once, the rest wait for flushAt or this flush.
  await analytics.flush();
  await Promise.all(outcomes);

  expect(seen.length).toBeGreaterThan(0);
  for (const request of seen) {
    expect(request).toMatchObject({ path: "/v1/batch", authorization: true, contentEncoding });
    // rudder-sdk-node labels its gzip JSON as a form; Waypost parses JSON whatever the label.
    if (gzip) expect(request.contentType).toContain("application/x-www-form-urlencoded");
  }
  const received = await receiver.waitForRequests(6);
  expectSpecBodies(received, source.writeKey, userId, "analytics-node");
});
