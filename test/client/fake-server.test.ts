import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { Analytics } from "../../packages/client/src/index.js";
import { startFakeTrackingServer, startRawServer, type FakeServer } from "./fake-server.js";
import { acceptAll, collectOutcomes } from "./support.js";

/**
 * Server behaviour the real Waypost does not produce on demand, from a
 * Connect server of the test's own on a real socket.
 */
const servers: FakeServer[] = [];
const clients: Analytics[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close({ timeout: 100 })));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function fake(...args: Parameters<typeof startFakeTrackingServer>) {
  const server = await startFakeTrackingServer(...args);
  servers.push(server);
  return server;
}

function analyticsFor(url: string, options: Partial<ConstructorParameters<typeof Analytics>[0]> = {}) {
  const analytics = new Analytics({ writeKey: "wk", endpoint: url, ...options });
  clients.push(analytics);
  return analytics;
}

describe("retry hints", () => {
  it("waits at least the server's Retry-After before retrying", async () => {
    const arrivals: number[] = [];
    const server = await fake((req) => {
      arrivals.push(performance.now());
      if (arrivals.length === 1) throw new ConnectError("busy, come back later", Code.Unavailable, { "retry-after": "1" });
      return acceptAll(req);
    });
    const outcomes = collectOutcomes();
    // The client's own first backoff would be 50 to 100 ms.
    const analytics = analyticsFor(server.url, { ...outcomes, initialBackoff: 100 });
    analytics.track({ userId: "u", event: "E" });
    await analytics.flush();
    expect(arrivals).toHaveLength(2);
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(1000);
    // Not the client's own backoff, nor much beyond the hint plus its 10% spread.
    expect(arrivals[1]! - arrivals[0]!).toBeLessThan(1000 * 1.1 + 1000);
    expect(outcomes.successes).toHaveLength(1);
  });

  it("honours Retry-After on a proxy's plain 503, and caps it at maxRetryAfter", async () => {
    const arrivals: number[] = [];
    const proxy = await startRawServer((_req, res) => {
      arrivals.push(performance.now());
      res.writeHead(503, { "retry-after": "3600", "content-type": "text/plain" }).end("maintenance");
    });
    servers.push(proxy);
    const outcomes = collectOutcomes();
    const analytics = analyticsFor(proxy.url, { ...outcomes, maxRetries: 1, maxRetryAfter: 300 });
    analytics.track({ userId: "u", event: "E" });
    await analytics.flush();
    expect(arrivals).toHaveLength(2);
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(300);
    // Capped, not the hour asked for: any bound far below 3,600 s tells them apart on a busy machine.
    expect(arrivals[1]! - arrivals[0]!).toBeLessThan(60_000);
    expect(outcomes.failures.map((f) => [f.error.reason, f.error.code])).toEqual([["retries_exhausted", "Unavailable"]]);
  });
});

describe("transport", () => {
  it("sends batches over HTTP/2 with the write key as Basic auth", async () => {
    const seen: Array<string | null> = [];
    const server = await fake(
      (req, ctx) => {
        seen.push(ctx.requestHeader.get("authorization"));
        return acceptAll(req);
      },
      { http2: true },
    );
    const outcomes = collectOutcomes();
    const analytics = analyticsFor(server.url, { ...outcomes, httpVersion: "2", writeKey: "key-é" });
    analytics.track({ userId: "u", event: "E" });
    await analytics.close();
    expect(outcomes.successes).toHaveLength(1);
    expect(seen).toEqual([`Basic ${Buffer.from("key-é:").toString("base64")}`]);
  });

  it("rejected index 0 is reported and never resent", async () => {
    let requests = 0;
    const server = await fake((req) => {
      requests++;
      return { accepted: req.batch.length - 1, rejected: [{ index: 0, reason: "userId is longer than 1024 characters" }] };
    });
    const outcomes = collectOutcomes();
    const analytics = analyticsFor(server.url, { ...outcomes });
    const first = analytics.track({ userId: "u", event: "E" });
    analytics.track({ userId: "v", event: "E" });
    await analytics.close();
    expect(requests).toBe(1);
    expect(outcomes.failures.map((f) => [f.call.messageId, f.error.reason])).toEqual([[first, "rejected"]]);
  });
});
