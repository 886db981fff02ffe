import { toJsonString } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { describe, expect } from "vitest";
import { BatchRequestSchema, type BatchRequest } from "../../gen/waypost/v1/tracking_pb.js";
import { Analytics as BrowserAnalytics } from "../../packages/client/src/browser.js";
import {
  Analytics,
  InvalidCallError,
  createTrackingClient,
  maxRequestBytes,
  type AnalyticsOptions,
} from "../../packages/client/src/index.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { collectOutcomes, deferred } from "./support.js";

/** The batching client against a real Waypost server on loopback. */
const test = testWith();

/** Records every Batch request the client sends: its calls and its JSON body size. */
function requestLog(): { interceptor: Interceptor; sizes: number[]; bytes: number[] } {
  const log = { sizes: [] as number[], bytes: [] as number[] };
  const interceptor: Interceptor = (next) => async (req) => {
    if (req.method.name === "Batch" && !req.stream) {
      const message = req.message as BatchRequest;
      log.sizes.push(message.batch.length);
      log.bytes.push(Buffer.byteLength(toJsonString(BatchRequestSchema, message)));
    }
    return next(req);
  };
  return { interceptor, ...log };
}

async function storedCount(server: TestServer, sourceId: string): Promise<number> {
  const { rows } = await server.pool.query<{ n: string }>("SELECT count(*) AS n FROM messages WHERE source_id = $1", [sourceId]);
  return Number(rows[0]!.n);
}

async function newClient(server: TestServer, options: Partial<AnalyticsOptions> = {}) {
  const source = await server.createSource();
  const requests = requestLog();
  const outcomes = collectOutcomes();
  const analytics = new Analytics({
    writeKey: source.writeKey,
    endpoint: server.url,
    interceptors: [requests.interceptor],
    ...outcomes,
    ...options,
  });
  return { source, requests, outcomes, analytics };
}

describe("batching against the server", () => {
  test("45 calls with default settings arrive as 3 requests: 20, 20, and 5 on close()", async ({ server }) => {
    const { source, requests, outcomes, analytics } = await newClient(server);
    for (let i = 0; i < 45; i++) analytics.track({ userId: `u${i}`, event: "Signed Up", properties: { i } });
    await outcomes.settled(40);
    expect(requests.sizes).toEqual([20, 20]);
    await analytics.close();
    expect(requests.sizes).toEqual([20, 20, 5]);
    expect(outcomes.successes).toHaveLength(45);
    expect(outcomes.failures).toHaveLength(0);
    expect(await storedCount(server, source.id)).toBe(45);
  });

  test("sends a lone call once the flush interval has passed, without flush()", async ({ server }) => {
    const { source, requests, outcomes, analytics } = await newClient(server, { flushInterval: 200 });
    const started = performance.now();
    const messageId = analytics.identify({ userId: "u1", traits: { plan: "pro" } });
    await outcomes.settled(1);
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(outcomes.successes.map((s) => s.messageId)).toEqual([messageId]);
    expect(requests.sizes).toEqual([1]);
    const { rows } = await server.pool.query("SELECT type, user_id, payload FROM messages WHERE source_id = $1", [source.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ type: "identify", user_id: "u1" });
    expect(JSON.parse(rows[0].payload)).toMatchObject({ traits: { plan: "pro" }, messageId });
    await analytics.close();
  });

  test("stores every call type with the fields of the Go library's structs", async ({ server }) => {
    const { source, outcomes, analytics } = await newClient(server);
    const timestamp = new Date(Date.UTC(2024, 4, 1, 12, 0, 0, 123));
    analytics.identify({ userId: "u1", traits: { name: "Ada" }, context: { ip: "1.2.3.4" } });
    analytics.track({ anonymousId: "a1", event: "Clicked", properties: { x: 1 }, timestamp, integrations: { All: true } });
    analytics.page({ userId: "u1", name: "Home", category: "Docs", properties: { url: "https://x.test/" } });
    analytics.screen({ userId: "u1", name: "Settings" });
    analytics.group({ userId: "u1", groupId: "g1", traits: { seats: 5 } });
    analytics.alias({ userId: "u1", previousId: "a1", messageId: "alias-1" });
    await analytics.close();
    expect(outcomes.failures).toEqual([]);
    const { rows } = await server.pool.query<{ type: string; payload: string }>(
      "SELECT type, payload FROM messages WHERE source_id = $1 ORDER BY type",
      [source.id],
    );
    const byType = Object.fromEntries(rows.map((r) => [r.type, JSON.parse(r.payload)]));
    expect(Object.keys(byType).sort()).toEqual(["alias", "group", "identify", "page", "screen", "track"]);
    expect(byType.track).toMatchObject({ event: "Clicked", anonymousId: "a1", timestamp: "2024-05-01T12:00:00.123Z" });
    expect(byType.page).toMatchObject({ name: "Home", category: "Docs", properties: { url: "https://x.test/" } });
    expect(byType.group).toMatchObject({ groupId: "g1", traits: { seats: 5 } });
    expect(byType.alias).toMatchObject({ "Previous ID": "a1", "User ID": "u1", messageId: "alias-1" });
    expect(byType.identify).toMatchObject({ context: { ip: "1.2.3.4" } });
  });

  test("splits 100 calls of 20 KB into requests under 500 KB, and all are stored", async ({ server }) => {
    const { source, requests, outcomes, analytics } = await newClient(server, { flushAt: 100 });
    const blob = "x".repeat(20 * 1024);
    for (let i = 0; i < 100; i++) analytics.track({ userId: `u${i}`, event: "Uploaded", properties: { blob } });
    await analytics.close();
    expect(requests.sizes.length).toBeGreaterThanOrEqual(5);
    expect(requests.sizes.reduce((a, b) => a + b, 0)).toBe(100);
    for (const bytes of requests.bytes) expect(bytes).toBeLessThan(maxRequestBytes);
    expect(outcomes.failures).toEqual([]);
    expect(await storedCount(server, source.id)).toBe(100);
  });

  test("splits a batch the server refuses for its size (by the error's detail) until every call is stored", async ({ server }) => {
    // An interceptor pads each call of a request of 3 or more calls by 200 KB,
    // so the real server refuses those requests as too large; pairs still fit.
    const padding: Interceptor = (next) => async (req) => {
      if (req.method.name === "Batch" && !req.stream) {
        const message = req.message as BatchRequest;
        if (message.batch.length > 2) {
          for (const m of message.batch) if (m.type.case === "track") m.type.value.properties = { pad: "p".repeat(200 * 1024) };
        }
      }
      return next(req);
    };
    const { source, requests, outcomes, analytics } = await newClient(server, { flushAt: 8 });
    const padded = new Analytics({
      writeKey: source.writeKey,
      endpoint: server.url,
      flushAt: 8,
      interceptors: [requests.interceptor, padding],
      ...outcomes,
    });
    await analytics.close();
    for (let i = 0; i < 8; i++) padded.track({ userId: `u${i}`, event: "Padded" });
    await padded.close();
    // Halves go out concurrently, so only the multiset of sizes is fixed.
    expect([...requests.sizes].sort()).toEqual([2, 2, 2, 2, 4, 4, 8]);
    expect(outcomes.failures).toEqual([]);
    expect(outcomes.successes).toHaveLength(8);
    expect(await storedCount(server, source.id)).toBe(8);
  });

  test("refuses a call over 32 KB when it is made; a call just under the limit is stored", async ({ server }) => {
    const { source, outcomes, analytics } = await newClient(server);
    expect(() => analytics.track({ userId: "u", event: "Big", properties: { blob: "x".repeat(32 * 1024) } })).toThrow(InvalidCallError);
    expect(() => analytics.track({ userId: "u", event: "Big", properties: { blob: "x".repeat(32 * 1024) } })).toThrow(
      /over the limit of 32768 bytes \(32 KB\)/,
    );
    // The largest call the client takes: the server must take it too.
    let size = 32 * 1024;
    let accepted: string | undefined;
    while (!accepted) {
      try {
        accepted = analytics.track({ userId: "u", event: "Big", properties: { blob: "x".repeat(size) } });
      } catch {
        size -= 1;
      }
    }
    await analytics.close();
    expect(outcomes.failures).toEqual([]);
    expect(outcomes.successes.map((s) => s.messageId)).toEqual([accepted]);
    expect(await storedCount(server, source.id)).toBe(1);
  });

  test("works over HTTP/2 (h2c with prior knowledge)", async ({ server }) => {
    const { source, outcomes, analytics } = await newClient(server, { httpVersion: "2", maxRetries: 1, requestTimeout: 2000 });
    analytics.track({ userId: "u", event: "Over h2" });
    await analytics.close();
    expect(outcomes.failures.map((f) => f.error.message)).toEqual([]);
    expect(outcomes.successes).toHaveLength(1);
    expect(await storedCount(server, source.id)).toBe(1);
  });

  test("works through the browser entry's fetch transport", async ({ server }) => {
    const source = await server.createSource();
    const outcomes = collectOutcomes();
    const web = new BrowserAnalytics({ writeKey: source.writeKey, endpoint: server.url, ...outcomes });
    web.track({ userId: "u", event: "Over fetch" });
    await web.close();
    expect(outcomes.failures).toEqual([]);
    expect(await storedCount(server, source.id)).toBe(1);
  });

  test("createTrackingClient sends the write key as Basic auth", async ({ server }) => {
    const source = await server.createSource();
    const client = createTrackingClient({ endpoint: server.url, writeKey: source.writeKey });
    const { messageId } = await client.track({ track: { userId: "u1", event: "Unary" } });
    expect(messageId).not.toBe("");
    expect(await storedCount(server, source.id)).toBe(1);
    const wrong = createTrackingClient({ endpoint: server.url, writeKey: "not-a-key" });
    await expect(wrong.track({ track: { userId: "u1", event: "Unary" } })).rejects.toThrow(/unauthenticated/);
  });
});

describe("failures against the server", () => {
  test("reports a call the server rejects (nesting deeper than 64 levels) without retrying; the rest is stored", async ({ server }) => {
    const { source, requests, outcomes, analytics } = await newClient(server);
    let deep: Record<string, unknown> = { leaf: true };
    for (let i = 0; i < 70; i++) deep = { d: deep };
    const bad = analytics.track({ userId: "u", event: "Deep", properties: deep });
    analytics.track({ userId: "u", event: "Fine" });
    await analytics.close();
    expect(requests.sizes).toEqual([2]);
    expect(outcomes.failures.map((f) => [f.call.messageId, f.error.reason])).toEqual([[bad, "rejected"]]);
    expect(outcomes.failures[0]!.error.message).toMatch(/properties is nested deeper than 64 levels/);
    expect(outcomes.successes).toHaveLength(1);
    expect(await storedCount(server, source.id)).toBe(1);
  });

  test("reports every call of a request with a wrong write key as failed, without retrying", async ({ server }) => {
    const { requests, outcomes } = await newClient(server);
    const analytics = new Analytics({
      writeKey: "wrong-key",
      endpoint: server.url,
      interceptors: [requests.interceptor],
      ...outcomes,
    });
    analytics.track({ userId: "u", event: "E" });
    analytics.track({ userId: "u", event: "E" });
    await analytics.close();
    expect(requests.sizes).toEqual([2]);
    expect(outcomes.failures.map((f) => [f.error.reason, f.error.code])).toEqual([
      ["permanent", "Unauthenticated"],
      ["permanent", "Unauthenticated"],
    ]);
  });

  test("reports calls over maxQueueSize as overflow and delivers the rest", async ({ server }) => {
    const { source, outcomes, analytics } = await newClient(server, { flushAt: 100, maxQueueSize: 10 });
    for (let i = 0; i < 12; i++) analytics.track({ userId: `u${i}`, event: "E" });
    await outcomes.settled(2);
    expect(outcomes.failures.map((f) => f.error.reason)).toEqual(["overflow", "overflow"]);
    await analytics.close();
    expect(outcomes.successes).toHaveLength(10);
    expect(await storedCount(server, source.id)).toBe(10);
  });

  test("close() delivers calls that were being retried while the server was down and came back", async ({ server }) => {
    const retrying = deferred();
    const lines: string[] = [];
    const { source, outcomes, analytics } = await newClient(server, {
      debug: true,
      initialBackoff: 50,
      maxBackoff: 200,
      // Enough retries to outlast the server's restart (migrations included).
      maxRetries: 1000,
      logger: (line) => {
        lines.push(line);
        if (/retry \d+ in/.test(line)) retrying.resolve();
      },
    });
    for (let i = 0; i < 5; i++) analytics.track({ userId: `before${i}`, event: "E" });
    await analytics.flush();
    const url = server.url;
    await server.stopService();
    for (let i = 0; i < 25; i++) analytics.track({ userId: `during${i}`, event: "E" });
    let flushed = false;
    void analytics.flush().then(() => (flushed = true));
    await retrying.promise;
    expect(flushed).toBe(false);
    expect(outcomes.successes).toHaveLength(5);
    await server.startService();
    expect(server.url).toBe(url);
    await analytics.close();
    expect(flushed).toBe(true);
    expect(outcomes.failures).toEqual([]);
    expect(outcomes.successes).toHaveLength(30);
    expect(await storedCount(server, source.id)).toBe(30);
    expect(lines.some((l) => /failed: .*(unavailable|aborted)/i.test(l))).toBe(true);
  });
});
