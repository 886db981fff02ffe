import { createHmac, randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { sign as githubSign } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import { describe, expect, test } from "vitest";
import type { HookSettings } from "../../../src/ingest/hooks/hook-settings.js";
import { type HookVerdict, idempotencyKeyOf, verifyHookHeaders, verifyHookRequest } from "../../../src/ingest/hooks/verifiers.js";

// Each verifier against the sender's own signing code where the sender
// publishes it (stripe, @octokit/webhooks-methods, standardwebhooks), by hand
// for Shopify and the generic HMAC.

const require = createRequire(import.meta.url);
const Stripe = require("stripe") as new (
  key: string,
) => {
  webhooks: { generateTestHeaderString(options: { payload: string; secret: string; timestamp?: number }): string };
};
const stripe = new Stripe("sk_test_not_used");

const now = new Date("2026-11-28T15:00:00Z");
const nowSeconds = Math.floor(now.getTime() / 1000);
const body = Buffer.from(JSON.stringify({ id: "evt_1", type: "payment_intent.succeeded", data: { object: { id: "pi_9" } } }));

function settings(fields: Partial<HookSettings>): HookSettings {
  return {
    verifier: "none",
    secret: "",
    transform: "",
    idempotencyKey: "",
    response: { status: 200, contentType: "application/json", body: '{"accepted":true}' },
    tokenHeader: "",
    maxRequestsPerSecond: 0,
    ...fields,
  };
}

function verify(config: HookSettings, headers: Record<string, string>, payload = body, at = now): HookVerdict {
  // Node hands headers over with lower-case names.
  const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  return verifyHookRequest(config, { headers: lower, body: payload, now: at });
}

const rejected = (reason: string) => ({ ok: false, reason });

describe("stripe", () => {
  const secret = "whsec_test_secret_for_stripe";
  const config = settings({ verifier: "stripe", secret });
  const header = (options: { timestamp?: number; secret?: string; payload?: string } = {}) =>
    stripe.webhooks.generateTestHeaderString({
      payload: options.payload ?? body.toString(),
      secret: options.secret ?? secret,
      timestamp: options.timestamp ?? nowSeconds,
    });

  test("a signature from the stripe package is accepted", () => {
    expect(verify(config, { "Stripe-Signature": header() })).toEqual({ ok: true });
  });
  test("several v1 signatures (a rolled secret): one matching is enough", () => {
    const old = header({ secret: "whsec_the_old_one" });
    const current = header();
    const both = `${old},v1=${current.split("v1=")[1]}`;
    expect(verify(config, { "Stripe-Signature": both })).toEqual({ ok: true });
    expect(verify(config, { "Stripe-Signature": old })).toEqual(rejected("no v1 signature matches"));
  });
  test("bad, altered, stale, future and missing are refused with a reason", () => {
    expect(verify(config, { "Stripe-Signature": header({ secret: "whsec_other" }) })).toEqual(rejected("no v1 signature matches"));
    expect(verify(config, { "Stripe-Signature": header() }, Buffer.from(`${body.toString()} `))).toEqual(
      rejected("no v1 signature matches"),
    );
    expect(verify(config, { "Stripe-Signature": header({ timestamp: nowSeconds - 301 }) })).toEqual(
      rejected("timestamp outside the 5-minute tolerance"),
    );
    expect(verify(config, { "Stripe-Signature": header({ timestamp: nowSeconds - 299 }) })).toEqual({ ok: true });
    expect(verify(config, { "Stripe-Signature": header({ timestamp: nowSeconds + 400 }) })).toEqual(
      rejected("timestamp outside the 5-minute tolerance"),
    );
    expect(verify(config, {})).toEqual(rejected("missing Stripe-Signature header"));
    expect(verify(config, { "Stripe-Signature": `t=${nowSeconds}` })).toEqual(rejected("Stripe-Signature header has no v1 signature"));
    expect(verify(config, { "Stripe-Signature": "v1=00" })).toEqual(rejected("Stripe-Signature header has no timestamp (t=)"));
  });
  test("the idempotency key is the event id in the body", () => {
    expect(idempotencyKeyOf(config, {}, JSON.parse(body.toString()))).toBe("evt_1");
    expect(idempotencyKeyOf(config, {}, undefined)).toBeUndefined();
  });
});

describe("standard webhooks", () => {
  const secret = `whsec_${randomBytes(24).toString("base64")}`;
  const other = `whsec_${randomBytes(24).toString("base64")}`;
  const config = settings({ verifier: "standard_webhooks", secret });
  const headersFor = (signingSecret: string, at: Date, id = "msg_1") => ({
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new Webhook(signingSecret).sign(id, at, body.toString()),
  });

  test("a signature from the standardwebhooks package is accepted", () => {
    expect(verify(config, headersFor(secret, now))).toEqual({ ok: true });
  });
  test("rotation: several space-separated signatures, one matching is enough", () => {
    const a = headersFor(other, now);
    const b = headersFor(secret, now);
    expect(verify(config, { ...a, "webhook-signature": `${a["webhook-signature"]} ${b["webhook-signature"]}` })).toEqual({ ok: true });
    expect(verify(config, a)).toEqual(rejected("no v1 signature matches"));
  });
  test("stale, future, tampered id and missing headers are refused", () => {
    expect(verify(config, headersFor(secret, new Date(now.getTime() - 301_000)))).toEqual(
      rejected("timestamp outside the 5-minute tolerance"),
    );
    expect(verify(config, headersFor(secret, new Date(now.getTime() + 301_000)))).toEqual(
      rejected("timestamp outside the 5-minute tolerance"),
    );
    expect(verify(config, { ...headersFor(secret, now), "webhook-id": "msg_2" })).toEqual(rejected("no v1 signature matches"));
    const { "webhook-signature": _, ...unsigned } = headersFor(secret, now);
    expect(verify(config, unsigned)).toEqual(rejected("missing webhook-signature header"));
    expect(verify(config, {})).toEqual(rejected("missing webhook-id header"));
    expect(verify(config, { ...headersFor(secret, now), "webhook-signature": "v2,abc" })).toEqual(
      rejected("webhook-signature header has no v1 signature"),
    );
  });
  test("Svix's svix-* names are read too", () => {
    const headers = headersFor(secret, now);
    const svix = {
      "svix-id": headers["webhook-id"],
      "svix-timestamp": headers["webhook-timestamp"],
      "svix-signature": headers["webhook-signature"],
    };
    expect(verify(config, svix)).toEqual({ ok: true });
    expect(idempotencyKeyOf(config, svix, undefined)).toBe("msg_1");
  });
  test("the idempotency key is webhook-id", () => {
    expect(idempotencyKeyOf(config, { "webhook-id": "msg_7" }, {})).toBe("msg_7");
  });
});

describe("github", () => {
  const config = settings({ verifier: "github", secret: "gh-secret" });
  test("a signature from @octokit/webhooks-methods is accepted; bad or missing refused", async () => {
    expect(verify(config, { "X-Hub-Signature-256": await githubSign("gh-secret", body.toString()) })).toEqual({ ok: true });
    expect(verify(config, { "X-Hub-Signature-256": await githubSign("other", body.toString()) })).toEqual(
      rejected("X-Hub-Signature-256 signature does not match"),
    );
    expect(verify(config, { "X-Hub-Signature": "sha1=00" })).toEqual(rejected("missing X-Hub-Signature-256 header"));
    expect(verify(config, { "X-Hub-Signature-256": "deadbeef" })).toEqual(
      rejected("X-Hub-Signature-256 header does not start with sha256="),
    );
    expect(verify(config, { "X-Hub-Signature-256": "sha256=zz" })).toEqual(rejected("X-Hub-Signature-256 header is not sha256=<hex>"));
  });
  test("the idempotency key is X-GitHub-Delivery", () => {
    expect(idempotencyKeyOf(config, { "x-github-delivery": "72d3162e" }, {})).toBe("72d3162e");
  });
});

describe("shopify (by hand: base64 HMAC-SHA256 of the body)", () => {
  const config = settings({ verifier: "shopify", secret: "shpss_secret" });
  const signature = (key: string) => createHmac("sha256", key).update(body).digest("base64");
  test("good accepted; bad and missing refused", () => {
    expect(verify(config, { "X-Shopify-Hmac-Sha256": signature("shpss_secret") })).toEqual({ ok: true });
    expect(verify(config, { "X-Shopify-Hmac-Sha256": signature("other") })).toEqual(
      rejected("X-Shopify-Hmac-Sha256 signature does not match"),
    );
    expect(verify(config, {})).toEqual(rejected("missing X-Shopify-Hmac-Sha256 header"));
  });
  test("the idempotency key is X-Shopify-Webhook-Id", () => {
    expect(idempotencyKeyOf(config, { "x-shopify-webhook-id": "b54557e4" }, {})).toBe("b54557e4");
  });
});

describe("generic hmac (by hand)", () => {
  test.each([
    ["sha1", "hex", ""],
    ["sha256", "hex", "sha256="],
    ["sha512", "base64", "v1="],
  ] as const)("%s %s prefix %j", (algorithm, encoding, prefix) => {
    const config = settings({ verifier: "hmac", secret: "k", hmac: { header: "X-Signature", algorithm, encoding, prefix } });
    const good = prefix + createHmac(algorithm, "k").update(body).digest(encoding);
    const bad = prefix + createHmac(algorithm, "not-k").update(body).digest(encoding);
    expect(verify(config, { "X-Signature": good })).toEqual({ ok: true });
    expect(verify(config, { "X-Signature": bad })).toEqual(rejected("X-Signature signature does not match"));
    expect(verify(config, {})).toEqual(rejected("missing X-Signature header"));
  });
  test("hex in upper case is the same signature", () => {
    const config = settings({ verifier: "hmac", secret: "k", hmac: { header: "X-Sig", algorithm: "sha256", encoding: "hex", prefix: "" } });
    expect(verify(config, { "X-Sig": createHmac("sha256", "k").update(body).digest("hex").toUpperCase() })).toEqual({ ok: true });
  });
});

describe("basic and token", () => {
  const basic = settings({ verifier: "basic", secret: "hooks:s3cret" });
  const encode = (text: string) => `Basic ${Buffer.from(text).toString("base64")}`;
  test("basic: user:password", () => {
    expect(verify(basic, { Authorization: encode("hooks:s3cret") })).toEqual({ ok: true });
    expect(verify(basic, { Authorization: encode("hooks:wrong") })).toEqual(rejected("wrong user or password"));
    expect(verify(basic, { Authorization: "Bearer hooks:s3cret" })).toEqual(rejected("Authorization header is not Basic credentials"));
    expect(verify(basic, {})).toEqual(rejected("missing Authorization header"));
  });
  test("token: Authorization: Bearer by default, or a configured header", () => {
    const bearer = settings({ verifier: "token", secret: "tok_123" });
    expect(verify(bearer, { Authorization: "Bearer tok_123" })).toEqual({ ok: true });
    expect(verify(bearer, { Authorization: "Bearer tok_1234" })).toEqual(rejected("wrong Bearer token"));
    expect(verify(bearer, { Authorization: "tok_123" })).toEqual(rejected("Authorization header is not a Bearer token"));
    expect(verify(bearer, {})).toEqual(rejected("missing Authorization header"));
    const custom = settings({ verifier: "token", secret: "tok_123", tokenHeader: "X-Gitlab-Token" });
    expect(verify(custom, { "X-Gitlab-Token": "tok_123" })).toEqual({ ok: true });
    expect(verify(custom, { "X-Gitlab-Token": "nope" })).toEqual(rejected("wrong X-Gitlab-Token token"));
    expect(verify(custom, { Authorization: "Bearer tok_123" })).toEqual(rejected("missing X-Gitlab-Token header"));
  });
  test("token: the scheme in any case, the token trimmed, spaces inside a header value are the token's", () => {
    const bearer = settings({ verifier: "token", secret: "tok 123" });
    expect(verify(bearer, { Authorization: "bearer \t tok 123  " })).toEqual({ ok: true });
    expect(verify(bearer, { Authorization: "Bearer" })).toEqual(rejected("Authorization header is not a Bearer token"));
    expect(verify(bearer, { Authorization: "Bearer    " })).toEqual(rejected("Authorization header is not a Bearer token"));
    expect(verify(bearer, { Authorization: "Bearertok 123" })).toEqual(rejected("Authorization header is not a Bearer token"));
  });
  test.each([
    ["token", settings({ verifier: "token", secret: "tok_123" }), "Authorization", (run: string) => `Bearer a${run}b`],
    ["basic", basic, "Authorization", (run: string) => `Basic a${run}b`],
    ["token in a header", settings({ verifier: "token", secret: "t", tokenHeader: "X-Token" }), "X-Token", (run: string) => `a${run}b`],
    ["github", settings({ verifier: "github", secret: "s" }), "X-Hub-Signature-256", (run: string) => `sha256=${run}`],
    ["stripe", settings({ verifier: "stripe", secret: "whsec_x" }), "Stripe-Signature", (run: string) => `t=1,v1=${run}`],
  ])("%s: a 64 KB header of spaces is refused at once, unparsed", (_name, config, header, value) => {
    const started = performance.now();
    for (let i = 0; i < 20; i++) {
      const verdict = verify(config, { [header]: value(" ".repeat(64 * 1024)) });
      expect(verdict).toEqual(rejected(`${header} header is over 8192 characters`));
    }
    // The backtracking parse this replaces took seconds for one such header.
    expect(performance.now() - started).toBeLessThan(2_000);
  });
  test("a header just under the cap is parsed, in linear time", () => {
    const bearer = settings({ verifier: "token", secret: "tok_123" });
    const started = performance.now();
    for (let i = 0; i < 100; i++) {
      expect(verify(bearer, { Authorization: `Bearer a${" ".repeat(8000)}b` })).toEqual(rejected("wrong Bearer token"));
    }
    expect(performance.now() - started).toBeLessThan(2_000);
  });
  test("none accepts anything and has no idempotency key unless configured", () => {
    expect(verify(settings({}), {})).toEqual({ ok: true });
    expect(idempotencyKeyOf(settings({}), { "x-request-id": "r1" }, { id: 1 })).toBeUndefined();
  });
});

describe("configured idempotency keys", () => {
  test("a header name, whatever its case", () => {
    expect(idempotencyKeyOf(settings({ idempotencyKey: "X-Request-Id" }), { "x-request-id": "r1" }, undefined)).toBe("r1");
  });
  test("a JSON path, into objects and arrays; objects and absent values are no key", () => {
    const json = { data: { object: { id: "pi_9", n: 42 }, items: [{ sku: "A" }] } };
    expect(idempotencyKeyOf(settings({ idempotencyKey: "$.data.object.id" }), {}, json)).toBe("pi_9");
    expect(idempotencyKeyOf(settings({ idempotencyKey: "$.data.object.n" }), {}, json)).toBe("42");
    expect(idempotencyKeyOf(settings({ idempotencyKey: "$.data.items.0.sku" }), {}, json)).toBe("A");
    expect(idempotencyKeyOf(settings({ idempotencyKey: "$.data.object" }), {}, json)).toBeUndefined();
    expect(idempotencyKeyOf(settings({ idempotencyKey: "$.missing.id" }), {}, json)).toBeUndefined();
    expect(idempotencyKeyOf(settings({ idempotencyKey: "$.constructor" }), {}, json)).toBeUndefined();
  });
  test("a configured key replaces the verifier's default", () => {
    const config = settings({ verifier: "github", secret: "s", idempotencyKey: "$.id" });
    expect(idempotencyKeyOf(config, { "x-github-delivery": "d1" }, { id: "b1" })).toBe("b1");
  });
  test("keys over 200 characters are kept as their sha256", () => {
    const key = idempotencyKeyOf(settings({ idempotencyKey: "X-Id" }), { "x-id": "a".repeat(201) }, undefined);
    expect(key).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(idempotencyKeyOf(settings({ idempotencyKey: "X-Id" }), { "x-id": "a".repeat(200) }, undefined)).toBe("a".repeat(200));
  });
});

describe("what the headers alone decide (before the body is read)", () => {
  const whsec = `whsec_${Buffer.alloc(24, 1).toString("base64")}`;
  test.each([
    [settings({ verifier: "stripe", secret: "whsec_x" }), {}, "missing Stripe-Signature header"],
    [settings({ verifier: "github", secret: "s" }), {}, "missing X-Hub-Signature-256 header"],
    [settings({ verifier: "shopify", secret: "s" }), {}, "missing X-Shopify-Hmac-Sha256 header"],
    [settings({ verifier: "standard_webhooks", secret: whsec }), { "webhook-id": "m" }, "missing webhook-timestamp header"],
    [
      settings({ verifier: "hmac", secret: "s", hmac: { header: "X-Sig", algorithm: "sha256", encoding: "hex", prefix: "" } }),
      {},
      "missing X-Sig header",
    ],
  ] as const)("%#: a body-signing verifier without its header is refused: %s", (config, headers, reason) => {
    expect(verifyHookHeaders(config, headers, now)).toEqual({ ok: false, reason });
  });

  test("with the headers present (Svix's names too), only the body can tell", () => {
    expect(
      verifyHookHeaders(settings({ verifier: "stripe", secret: "whsec_x" }), { "stripe-signature": "t=1,v1=00" }, now),
    ).toBeUndefined();
    const svix = { "svix-id": "m", "svix-timestamp": "1", "svix-signature": "v1,x" };
    expect(verifyHookHeaders(settings({ verifier: "standard_webhooks", secret: whsec }), svix, now)).toBeUndefined();
  });

  test("verifiers that sign no body are judged whole", () => {
    const token = settings({ verifier: "token", secret: "t0k" });
    expect(verifyHookHeaders(token, { authorization: "Bearer t0k" }, now)).toEqual({ ok: true });
    expect(verifyHookHeaders(token, { authorization: "Bearer nope" }, now)?.ok).toBe(false);
    expect(verifyHookHeaders(settings({ verifier: "none" }), {}, now)).toEqual({ ok: true });
  });
});
