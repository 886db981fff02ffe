import { createHmac } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { verifyWebhookSignature, verifyWebhookSignatureAsync } from "../../packages/client/src/index.js";
import { debugMatches } from "../../packages/client/src/debug-log.js";
import { CallQueue, type QueuedCall } from "../../packages/client/src/queue.js";
import { classifyFailure, defaultRetryPolicy, parseRetryAfter, retryDelayMs } from "../../packages/client/src/retry.js";
import { batchRequestBytes, encodeBatch, takeBatch } from "../../packages/client/src/split.js";
import { prepareCall } from "../../packages/client/src/validate-call.js";
import { toJsonString } from "@bufbuild/protobuf";
import { BatchRequestSchema, RequestTooLargeSchema } from "../../gen/waypost/v1/tracking_pb.js";

let n = 0;
function queued(bytesOfProperties: number): QueuedCall {
  const call = { userId: "u", event: "E", properties: { blob: "x".repeat(bytesOfProperties) } };
  return { ...prepareCall("track", call, () => `id-${++n}`), seq: ++n, call };
}

describe("split", () => {
  it("takes at most maxCount calls and stays under maxBytes, but always one", () => {
    const queue = new CallQueue();
    for (let i = 0; i < 10; i++) queue.push(queued(100));
    expect(takeBatch(queue, 4, 1_000_000)).toHaveLength(4);
    const one = queued(0);
    const bytes = batchRequestBytes([one]);
    expect(takeBatch(queue, 100, bytes * 2)).toHaveLength(1);
    expect(takeBatch(queue, 100, 1)).toHaveLength(1);
    expect(queue.length).toBe(4);
  });

  it("estimates the Connect JSON body at its size or above", () => {
    const odd = { userId: "ü", event: "É", timestamp: new Date(), properties: { n: 1.5e300, s: '\u0001"' } };
    const calls = [queued(10), queued(2000), { ...prepareCall("track", odd, () => "x"), seq: 0, call: odd }];
    const { request, sent } = encodeBatch(calls);
    expect(sent).toHaveLength(3);
    const wire = new TextEncoder().encode(toJsonString(BatchRequestSchema, request)).length;
    expect(batchRequestBytes(calls)).toBeGreaterThanOrEqual(wire);
    expect(batchRequestBytes(calls) - wire).toBeLessThan(100);
  });

  it("isolates a call that protobuf cannot hold instead of failing the batch", () => {
    const good = queued(1);
    const bad = { ...queued(1), json: '{"userId":"u","event":"E","timestamp":"not a time"}' };
    const { sent, unencodable } = encodeBatch([good, bad]);
    expect(sent).toEqual([good]);
    expect(unencodable.map((u) => u.call)).toEqual([bad]);
  });
});

describe("retry policy", () => {
  const error = (code: Code, message = "x", headers?: Record<string, string>) =>
    new ConnectError(message, code, headers ? new Headers(headers) : undefined);

  it("retries transient codes, never invalid_argument or unauthenticated", () => {
    for (const code of [Code.Unavailable, Code.DeadlineExceeded, Code.Internal, Code.Unknown, Code.Aborted, Code.ResourceExhausted]) {
      expect(classifyFailure(error(code)).action).toBe("retry");
    }
    for (const code of [Code.InvalidArgument, Code.Unauthenticated, Code.PermissionDenied, Code.Unimplemented, Code.NotFound]) {
      expect(classifyFailure(error(code)).action).toBe("fail");
    }
  });

  it("splits a request refused for its size (by its RequestTooLarge detail), retries a rate limit", () => {
    const tooLarge = new ConnectError("whatever the text", Code.ResourceExhausted, undefined, [
      { desc: RequestTooLargeSchema, value: { limitBytes: 512_000n } },
    ]);
    expect(classifyFailure(tooLarge).action).toBe("split");
    // The words of a message decide nothing: without the detail it is a rate limit.
    expect(classifyFailure(error(Code.ResourceExhausted, "request is 600000 bytes, too large")).action).toBe("retry");
    // The detail on another code is not a size refusal.
    const invalid = new ConnectError("bad", Code.InvalidArgument, undefined, [{ desc: RequestTooLargeSchema, value: { limitBytes: 1n } }]);
    expect(classifyFailure(invalid).action).toBe("fail");
    expect(classifyFailure(error(Code.ResourceExhausted, "rate limited", { "retry-after": "2" }))).toEqual({
      action: "retry",
      retryAfterMs: 2000,
    });
  });

  it("reads Retry-After as seconds or an HTTP date", () => {
    expect(parseRetryAfter("3")).toBe(3000);
    expect(parseRetryAfter("0.5")).toBe(500);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6000);
    expect(parseRetryAfter("soon")).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
  });

  it("backs off exponentially with jitter, capped; a hint wins up to its cap", () => {
    const p = { ...defaultRetryPolicy, initialBackoffMs: 100, maxBackoffMs: 1000, maxRetryAfterMs: 5000 };
    expect(retryDelayMs(1, p, undefined, () => 0)).toBe(50);
    expect(retryDelayMs(1, p, undefined, () => 1)).toBe(100);
    expect(retryDelayMs(3, p, undefined, () => 1)).toBe(400);
    expect(retryDelayMs(10, p, undefined, () => 1)).toBe(1000);
    expect(retryDelayMs(1, p, 2000, () => 0)).toBe(2000);
    expect(retryDelayMs(1, p, 60_000, () => 0)).toBe(5000);
  });
});

describe("DEBUG matching, as the debug package does it", () => {
  it.each([
    ["analytics", true],
    ["express:*,analytics", true],
    ["express:* analytics", true],
    ["*", true],
    ["analytic*", true],
    ["*,-analytics", false],
    ["analytics-extra", false],
    ["", false],
    [undefined, false],
  ])("DEBUG=%s → %s", (value, expected) => {
    expect(debugMatches(value, "analytics")).toBe(expected);
  });
});

describe("verifyWebhookSignature", () => {
  const secret = "s3cret";
  const body = JSON.stringify({ version: 1, type: "track", event: "Café ☕", messageId: "m1" });
  const signature = createHmac("sha1", secret).update(body, "utf8").digest("hex");

  it("accepts the HMAC-SHA1 hex of the raw body, string or bytes, and of JSON.stringify(JSON.parse(body))", async () => {
    expect(verifyWebhookSignature(body, signature, secret)).toBe(true);
    expect(verifyWebhookSignature(new TextEncoder().encode(body), signature, secret)).toBe(true);
    expect(verifyWebhookSignature(JSON.stringify(JSON.parse(body)), signature, secret)).toBe(true);
    expect(await verifyWebhookSignatureAsync(body, signature, secret)).toBe(true);
    expect(await verifyWebhookSignatureAsync(new TextEncoder().encode(body), signature, secret)).toBe(true);
  });

  it("refuses a wrong secret, a changed body, a truncated or malformed signature", async () => {
    const flipped = (signature[0] === "a" ? "b" : "a") + signature.slice(1);
    for (const [b, s, k] of [
      [body, signature, "other"],
      [`${body} `, signature, secret],
      [body, flipped, secret],
      [body, signature.slice(0, 39), secret],
      [body, `sha1=${signature}`, secret],
      [body, "", secret],
    ] as const) {
      expect(verifyWebhookSignature(b, s, k)).toBe(false);
      expect(await verifyWebhookSignatureAsync(b, s, k)).toBe(false);
    }
  });
});
