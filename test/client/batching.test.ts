import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { Analytics, RequestTooLargeSchema, type AnalyticsOptions } from "../../packages/client/src/index.js";
import { acceptAll, batchCounter, collectOutcomes, deferred, memoryTransport } from "./support.js";

/**
 * The client's batching, retry and reporting logic against an in-memory
 * TrackingService (Connect's router transport). The same behaviours against
 * the real server are in server.test.ts.
 */
const clients: Analytics[] = [];
function client(options: Omit<AnalyticsOptions, "writeKey" | "endpoint">): Analytics {
  const analytics = new Analytics({ writeKey: "wk", endpoint: "http://unused.invalid", initialBackoff: 1, ...options });
  clients.push(analytics);
  return analytics;
}
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close({ timeout: 100 })));
});

const track = (i: number) => ({ userId: `u${i}`, event: "Tested" });

describe("batching", () => {
  it("sends 20 calls per request and the rest on flush()", async () => {
    const counter = batchCounter();
    const outcomes = collectOutcomes();
    const analytics = client({ transport: memoryTransport(acceptAll, [counter.interceptor]), ...outcomes });
    for (let i = 0; i < 45; i++) analytics.track(track(i));
    await outcomes.settled(40);
    expect(counter.sizes).toEqual([20, 20]);
    await analytics.flush();
    expect(counter.sizes).toEqual([20, 20, 5]);
    expect(outcomes.successes).toHaveLength(45);
  });

  it("flushAt 1 sends each call in its own request", async () => {
    const counter = batchCounter();
    const outcomes = collectOutcomes();
    const analytics = client({ flushAt: 1, transport: memoryTransport(acceptAll, [counter.interceptor]), ...outcomes });
    for (let i = 0; i < 3; i++) analytics.track(track(i));
    await outcomes.settled(3);
    expect(counter.sizes).toEqual([1, 1, 1]);
  });

  it("flush() resolves only after the server answered", async () => {
    const gate = deferred();
    let answered = false;
    const analytics = client({
      transport: memoryTransport(async (req) => {
        await gate.promise;
        answered = true;
        return acceptAll(req);
      }),
    });
    analytics.track(track(1));
    const flushed = analytics.flush();
    await Promise.resolve();
    expect(answered).toBe(false);
    gate.resolve();
    await flushed;
    expect(answered).toBe(true);
  });

  it("snapshots each call when it is made", async () => {
    const seen: unknown[] = [];
    const analytics = client({
      transport: memoryTransport((req) => {
        for (const m of req.batch) if (m.type.case === "track") seen.push(m.type.value.properties);
        return acceptAll(req);
      }),
    });
    const properties = { step: 1 };
    analytics.track({ userId: "u", event: "E", properties });
    properties.step = 2;
    await analytics.flush();
    expect(seen).toEqual([{ step: 1 }]);
  });
});

describe("bounded queue", () => {
  it("reports calls over maxQueueSize as overflow failures; held calls still go out", async () => {
    const gate = deferred();
    const outcomes = collectOutcomes();
    const analytics = client({
      maxQueueSize: 3,
      transport: memoryTransport(async (req) => {
        await gate.promise;
        return acceptAll(req);
      }),
      ...outcomes,
    });
    const ids = [1, 2, 3, 4, 5].map((i) => analytics.track(track(i)));
    await outcomes.settled(2);
    expect(outcomes.failures.map((f) => [f.call.messageId, f.error.reason])).toEqual([
      [ids[3], "overflow"],
      [ids[4], "overflow"],
    ]);
    expect(outcomes.failures[0]!.error.message).toMatch(/queue is full \(maxQueueSize 3/);
    expect(analytics.pendingCalls).toBe(3);
    gate.resolve();
    await analytics.flush();
    expect(outcomes.successes.map((s) => s.messageId)).toEqual(ids.slice(0, 3));
  });

  it("without onFailure, a dropped call is logged, not silent", async () => {
    const lines: string[] = [];
    const gate = deferred();
    const analytics = client({
      maxQueueSize: 1,
      logger: (l) => lines.push(l),
      transport: memoryTransport(async (r) => {
        await gate.promise;
        return acceptAll(r);
      }),
    });
    analytics.track(track(1));
    analytics.track(track(2));
    expect(lines.join("\n")).toMatch(/error queue is full/);
    gate.resolve();
  });
});

describe("failures", () => {
  it("reports calls the server rejected, with its reason, and does not retry them", async () => {
    const counter = batchCounter();
    const outcomes = collectOutcomes();
    const analytics = client({
      transport: memoryTransport(
        (req) => ({ accepted: req.batch.length - 1, rejected: [{ index: 0, reason: "properties is nested deeper than 64 levels" }] }),
        [counter.interceptor],
      ),
      ...outcomes,
    });
    const first = analytics.track(track(1));
    analytics.track(track(2));
    await analytics.flush();
    expect(counter.sizes).toEqual([2]);
    expect(outcomes.failures.map((f) => [f.call.messageId, f.error.reason])).toEqual([[first, "rejected"]]);
    expect(outcomes.failures[0]!.error.message).toContain("nested deeper than 64 levels");
    expect(outcomes.successes).toHaveLength(1);
  });

  it.each([Code.InvalidArgument, Code.Unauthenticated])("does not retry code %s", async (code) => {
    const counter = batchCounter();
    const outcomes = collectOutcomes();
    const analytics = client({
      transport: memoryTransport(() => {
        throw new ConnectError("no", code);
      }, [counter.interceptor]),
      ...outcomes,
    });
    analytics.track(track(1));
    await analytics.flush();
    expect(counter.sizes).toHaveLength(1);
    expect(outcomes.failures[0]!.error.reason).toBe("permanent");
    expect(outcomes.failures[0]!.error.code).toBe(Code[code]);
  });

  it("retries unavailable with backoff, then gives up after maxRetries", async () => {
    const counter = batchCounter();
    const outcomes = collectOutcomes();
    const analytics = client({
      maxRetries: 2,
      transport: memoryTransport(() => {
        throw new ConnectError("down", Code.Unavailable);
      }, [counter.interceptor]),
      ...outcomes,
    });
    analytics.track(track(1));
    await analytics.flush();
    expect(counter.sizes).toEqual([1, 1, 1]);
    expect(outcomes.failures[0]!.error.reason).toBe("retries_exhausted");
    expect(outcomes.failures[0]!.error.message).toMatch(/after 3 attempts: \[unavailable\] down/);
  });

  it("a transient failure followed by success delivers every call once", async () => {
    let calls = 0;
    const outcomes = collectOutcomes();
    const analytics = client({
      transport: memoryTransport((req) => {
        if (++calls === 1) throw new ConnectError("reset", Code.Aborted);
        return acceptAll(req);
      }),
      ...outcomes,
    });
    analytics.track(track(1));
    await analytics.flush();
    expect(calls).toBe(2);
    expect(outcomes.successes).toHaveLength(1);
    expect(outcomes.failures).toHaveLength(0);
  });

  it("splits a request the server found too large and sends both halves", async () => {
    const counter = batchCounter();
    const outcomes = collectOutcomes();
    const analytics = client({
      flushAt: 8,
      transport: memoryTransport(
        (req) => {
          if (req.batch.length > 2) {
            throw new ConnectError("too big", Code.ResourceExhausted, undefined, [
              { desc: RequestTooLargeSchema, value: { limitBytes: 512_000n } },
            ]);
          }
          return acceptAll(req);
        },
        [counter.interceptor],
      ),
      ...outcomes,
    });
    for (let i = 0; i < 8; i++) analytics.track(track(i));
    await analytics.flush();
    // Halves go out concurrently, so only the multiset of sizes is fixed.
    expect([...counter.sizes].sort()).toEqual([2, 2, 2, 2, 4, 4, 8]);
    expect(outcomes.successes).toHaveLength(8);
  });

  it("a callback that throws does not break the client", async () => {
    const lines: string[] = [];
    let successes = 0;
    const analytics = client({
      transport: memoryTransport(acceptAll),
      logger: (l) => lines.push(l),
      onSuccess: () => {
        successes++;
        throw new Error("oops");
      },
    });
    analytics.track(track(1));
    analytics.track(track(2));
    await analytics.flush();
    expect(successes).toBe(2);
    expect(lines.filter((l) => l.includes("onSuccess callback threw: Error: oops"))).toHaveLength(2);
  });
});

describe("close()", () => {
  it("stops accepting calls and delivers what is held", async () => {
    const outcomes = collectOutcomes();
    const analytics = client({ transport: memoryTransport(acceptAll), ...outcomes });
    analytics.track(track(1));
    const closed = analytics.close();
    expect(() => analytics.track(track(2))).toThrow(/after close\(\)/);
    expect(analytics.close()).toBe(closed);
    await closed;
    expect(outcomes.successes).toHaveLength(1);
  });

  it("reports calls still unacknowledged at the timeout as closed, and resolves", async () => {
    const outcomes = collectOutcomes();
    const analytics = client({
      transport: memoryTransport(() => {
        throw new ConnectError("down", Code.Unavailable);
      }),
      initialBackoff: 50,
      ...outcomes,
    });
    analytics.track(track(1));
    analytics.track(track(2));
    await analytics.close({ timeout: 120 });
    expect(outcomes.failures.map((f) => f.error.reason)).toEqual(["closed", "closed"]);
    expect(analytics.pendingCalls).toBe(0);
  });
});

describe("flush interval", () => {
  it("still sends calls left below flushAt after a busy spell (the timer is re-armed)", { timeout: 5_000 }, async () => {
    const gate = deferred();
    const intervalPassed = deferred();
    const outcomes = collectOutcomes();
    let requests = 0;
    const analytics = client({
      flushAt: 3,
      flushInterval: 50,
      maxConcurrentRequests: 1,
      debug: true,
      logger: (line) => {
        if (line.includes("flush interval of 50 ms passed")) intervalPassed.resolve();
      },
      transport: memoryTransport(async (req) => {
        if (++requests === 1) await gate.promise;
        return acceptAll(req);
      }),
      ...outcomes,
    });
    for (let i = 1; i <= 5; i++) analytics.track(track(i)); // 1-3 in flight (held up), 4-5 queued
    await intervalPassed.promise;
    for (let i = 6; i <= 8; i++) analytics.track(track(i)); // queue 4-8: due by count, but no request slot
    gate.resolve();
    await outcomes.settled(8); // 7 and 8 go out only if a timer is running for them
    expect(outcomes.successes).toHaveLength(8);
  });
});
