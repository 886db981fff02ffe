import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { verifyStandardWebhook } from "../../packages/client/src/index.js";
import { verifyStandardWebhook as verifyInBrowserEntry } from "../../packages/client/src/browser.js";

/**
 * verifyStandardWebhook against requests signed by the reference
 * implementation (the `standardwebhooks` npm package).
 */
const newSecret = () => `whsec_${randomBytes(32).toString("base64")}`;
const secret = newSecret();
const body = JSON.stringify({ type: "track", event: "Signed Up", userId: "u1", properties: { plan: "pro" } });
const sentAt = new Date("2026-05-01T12:00:00Z");

function signed(options: { secret?: string; id?: string; at?: Date; payload?: string } = {}) {
  const id = options.id ?? "msg_2b4f";
  const at = options.at ?? sentAt;
  const signature = new Webhook(options.secret ?? secret).sign(id, at, options.payload ?? body);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": signature,
  };
}

const now = () => sentAt.getTime() + 1_000;

describe("verifyStandardWebhook", () => {
  it("accepts a request the reference library signed, with Node-style or fetch headers", async () => {
    const headers = signed();
    expect(await verifyStandardWebhook(body, headers, { secret, now })).toEqual({
      valid: true,
      id: "msg_2b4f",
      timestamp: sentAt.getTime() / 1000,
    });
    expect((await verifyStandardWebhook(new TextEncoder().encode(body), new Headers(headers), { secret, now })).valid).toBe(true);
    expect((await verifyInBrowserEntry(body, headers, { secret, now })).valid).toBe(true);
    // Signed now, checked on the real clock: the reference verifier and this one agree.
    const fresh = signed({ at: new Date() });
    expect(new Webhook(secret).verify(body, fresh)).toEqual(JSON.parse(body));
    expect((await verifyStandardWebhook(body, fresh, { secret })).valid).toBe(true);
  });

  it("rejects a tampered body", async () => {
    const headers = signed();
    const tampered = body.replace("pro", "enterprise");
    expect(await verifyStandardWebhook(tampered, headers, { secret, now })).toEqual({ valid: false, reason: "no_matching_signature" });
  });

  it("rejects a request signed with another secret, and a tampered id or timestamp", async () => {
    expect(await verifyStandardWebhook(body, signed({ secret: newSecret() }), { secret, now })).toEqual({
      valid: false,
      reason: "no_matching_signature",
    });
    const headers = signed();
    expect((await verifyStandardWebhook(body, { ...headers, "webhook-id": "msg_other" }, { secret, now })).valid).toBe(false);
    const shifted = String(Number(headers["webhook-timestamp"]) + 1);
    expect((await verifyStandardWebhook(body, { ...headers, "webhook-timestamp": shifted }, { secret, now })).valid).toBe(false);
  });

  it("rejects a timestamp outside the tolerance, either way; the tolerance is adjustable", async () => {
    const headers = signed();
    const late = () => sentAt.getTime() + 5 * 60_000 + 1_000;
    const early = () => sentAt.getTime() - 5 * 60_000 - 1_000;
    expect(await verifyStandardWebhook(body, headers, { secret, now: late })).toEqual({
      valid: false,
      reason: "timestamp_out_of_tolerance",
    });
    expect(await verifyStandardWebhook(body, headers, { secret, now: early })).toEqual({
      valid: false,
      reason: "timestamp_out_of_tolerance",
    });
    expect((await verifyStandardWebhook(body, headers, { secret, now: late, toleranceMs: 10 * 60_000 })).valid).toBe(true);
  });

  it("accepts any of several secrets, and a header with one signature per secret (rotation)", async () => {
    const old = newSecret();
    const headers = signed({ secret: old });
    expect((await verifyStandardWebhook(body, headers, { secret: [secret, old], now })).valid).toBe(true);
    expect((await verifyStandardWebhook(body, headers, { secret: [secret], now })).valid).toBe(false);
    const both = { ...headers, "webhook-signature": `${signed()["webhook-signature"]} ${headers["webhook-signature"]}` };
    expect((await verifyStandardWebhook(body, both, { secret: old, now })).valid).toBe(true);
    expect((await verifyStandardWebhook(body, both, { secret, now })).valid).toBe(true);
  });

  it("names missing or malformed headers, and refuses a malformed secret", async () => {
    const headers = signed();
    expect(await verifyStandardWebhook(body, { ...headers, "webhook-id": undefined }, { secret, now })).toEqual({
      valid: false,
      reason: "missing_headers",
    });
    expect(await verifyStandardWebhook(body, { ...headers, "webhook-timestamp": "soon" }, { secret, now })).toEqual({
      valid: false,
      reason: "invalid_timestamp",
    });
    expect(await verifyStandardWebhook(body, { ...headers, "webhook-signature": "v2,abc" }, { secret, now })).toEqual({
      valid: false,
      reason: "no_matching_signature",
    });
    await expect(verifyStandardWebhook(body, headers, { secret: "whsec_!!!", now })).rejects.toThrow(TypeError);
  });
});
