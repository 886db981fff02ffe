import { createHmac } from "node:crypto";
import { createRequire } from "node:module";
import { sign as githubSign } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import { describe, expect } from "vitest";
import { HookVerifier, SourceKind } from "../../../gen/waypost/v1/source_pb.js";
import type { HookSettings } from "../../../src/ingest/hooks/hook-settings.js";
import { hookRows, insertWebhookSource, postHook } from "../../helpers/hook-sources.js";
import { testWith } from "../../helpers/fixtures.js";
import type { TestServer } from "../../helpers/server.js";

// Every verifier once through HTTP, signed by the sender's own code where it
// publishes it: a good request is stored, a bad one is a 401 with its
// one-line reason and stores nothing.

const require = createRequire(import.meta.url);
const Stripe = require("stripe") as new (
  key: string,
) => {
  webhooks: { generateTestHeaderString(options: { payload: string; secret: string; timestamp?: number }): string };
};
const stripe = new Stripe("sk_test_not_used");

const test = testWith({ server: { config: { role: "api" } } });
test.beforeAll(async () => {
  // An api process: it stores and processes nothing, so a stored request stays pending to be looked at.
});

const body = JSON.stringify({ id: "evt_1", type: "payment_intent.succeeded", data: { object: { id: "pi_9" } } });
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Posts `good`, then each of `bad`; expects only the good one stored. */
async function expectVerifier(
  server: TestServer,
  settings: Partial<HookSettings>,
  good: Record<string, string>,
  bad: Array<[Record<string, string>, string]>,
  payload = body,
) {
  const source = await insertWebhookSource(server, settings);
  for (const [headers, reason] of bad) {
    const answer = await postHook(source.url, payload, headers);
    expect(answer.status, reason).toBe(401);
    expect(JSON.parse(answer.text)).toEqual({ accepted: false, error: reason });
  }
  expect(await hookRows(server, source.id)).toHaveLength(0);
  const accepted = await postHook(source.url, payload, good);
  expect(accepted).toMatchObject({ status: 200, text: '{"accepted":true}' });
  const rows = await hookRows(server, source.id);
  expect(rows.map((r) => r.status)).toEqual(["pending"]);
  const { values } = await server.waypost.metrics.hookRequests.get();
  const count = (result: string) => values.find((v) => v.labels.source_id === source.id && v.labels.result === result)?.value ?? 0;
  expect(count("unauthorized")).toBe(bad.length);
  expect(count("accepted")).toBe(1);
  return { source, rows };
}

describe("each verifier over HTTP", () => {
  test("STRIPE (the stripe package's test header): good, wrong secret, stale, missing; a resend of the event is a duplicate", async ({
    server,
  }) => {
    const secret = "whsec_receipt_stripe";
    const header = (options: { secret?: string; timestamp?: number } = {}) =>
      stripe.webhooks.generateTestHeaderString({
        payload: body,
        secret: options.secret ?? secret,
        timestamp: options.timestamp ?? nowSeconds(),
      });
    const good = { "stripe-signature": header() };
    const { source, rows } = await expectVerifier(server, { verifier: "stripe", secret }, good, [
      [{ "stripe-signature": header({ secret: "whsec_other" }) }, "no v1 signature matches"],
      [{ "stripe-signature": header({ timestamp: nowSeconds() - 600 }) }, "timestamp outside the 5-minute tolerance"],
      [{}, "missing Stripe-Signature header"],
    ]);
    // Stripe's event id is the default idempotency key.
    expect(rows[0]!.idempotency_key).toBe("evt_1");
    expect((await postHook(source.url, body, good)).status).toBe(200);
    expect((await hookRows(server, source.id)).map((r) => r.status)).toEqual(["pending", "duplicate"]);
  });

  test("GITHUB (@octokit/webhooks-methods)", async ({ server }) => {
    await expectVerifier(
      server,
      { verifier: "github", secret: "gh-secret" },
      { "x-hub-signature-256": await githubSign("gh-secret", body), "x-github-delivery": "d1" },
      [
        [{ "x-hub-signature-256": await githubSign("other", body) }, "X-Hub-Signature-256 signature does not match"],
        [{}, "missing X-Hub-Signature-256 header"],
      ],
    );
  });

  test("STANDARD_WEBHOOKS (standardwebhooks)", async ({ server }) => {
    const secret = `whsec_${Buffer.alloc(24, 7).toString("base64")}`;
    const at = new Date();
    const signed = (key: string) => ({
      "webhook-id": "msg_1",
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": new Webhook(key).sign("msg_1", at, body),
    });
    const other = `whsec_${Buffer.alloc(24, 9).toString("base64")}`;
    const { rows } = await expectVerifier(server, { verifier: "standard_webhooks", secret }, signed(secret), [
      [signed(other), "no v1 signature matches"],
      [{}, "missing webhook-id header"],
    ]);
    expect(rows[0]!.idempotency_key).toBe("msg_1");
  });

  test("SHOPIFY (by hand)", async ({ server }) => {
    const sign = (key: string) => createHmac("sha256", key).update(body).digest("base64");
    await expectVerifier(server, { verifier: "shopify", secret: "shpss" }, { "x-shopify-hmac-sha256": sign("shpss") }, [
      [{ "x-shopify-hmac-sha256": sign("nope") }, "X-Shopify-Hmac-Sha256 signature does not match"],
    ]);
  });

  test("HMAC (by hand)", async ({ server }) => {
    const hmac = { header: "X-Signature", algorithm: "sha512" as const, encoding: "base64" as const, prefix: "v=" };
    const sign = (key: string) => `v=${createHmac("sha512", key).update(body).digest("base64")}`;
    await expectVerifier(server, { verifier: "hmac", secret: "k", hmac }, { "x-signature": sign("k") }, [
      [{ "x-signature": sign("not-k") }, "X-Signature signature does not match"],
    ]);
  });

  test("BASIC: Authorization is checked and never stored", async ({ server }) => {
    const encode = (text: string) => `Basic ${Buffer.from(text).toString("base64")}`;
    const { rows } = await expectVerifier(
      server,
      { verifier: "basic", secret: "hooks:s3cret" },
      { authorization: encode("hooks:s3cret") },
      [
        [{ authorization: encode("hooks:wrong") }, "wrong user or password"],
        [{}, "missing Authorization header"],
      ],
    );
    expect(Object.keys(rows[0]!.headers)).not.toContain("authorization");
  });

  test("a verifier whose stored settings are broken answers 401, never 500", async ({ server }) => {
    // An HMAC source without its hmac block (never written by the API, but a row may be edited by hand).
    const source = await insertWebhookSource(server, { verifier: "hmac", secret: "k" });
    const answer = await postHook(source.url, body, { "x-signature": "00" });
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.text).error).toMatch(/\S/);
    expect(await hookRows(server, source.id)).toHaveLength(0);
  });
});

describe("a source made through the API", () => {
  test("its inbound URL takes requests; after RotateHookToken the old token is a 404 at once", async ({ server }) => {
    const { source } = await server.sources.createSource({
      source: { name: "api hook", kind: SourceKind.WEBHOOK, webhook: { verifier: HookVerifier.NONE } },
    });
    const url = (token: string) => `${server.url}/hooks/${token}`;
    expect((await postHook(url(source!.hookToken), body)).status).toBe(200);
    const { source: rotated } = await server.sources.rotateHookToken({ id: source!.id });
    expect((await postHook(url(source!.hookToken), body)).status).toBe(404);
    expect((await postHook(url(rotated!.hookToken), body)).status).toBe(200);
    expect(await hookRows(server, source!.id)).toHaveLength(2);
  });
});
