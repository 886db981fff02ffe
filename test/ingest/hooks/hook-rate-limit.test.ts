import { createRequire } from "node:module";
import { expect } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { answerOf, hookRows, insertWebhookSource, openUpload, postHook } from "../../helpers/hook-sources.js";
import { testWith } from "../../helpers/fixtures.js";

// A webhook source's rate limit is its sender's: requests refused by the
// verifier (no signature, a wrong one) are counted in a bucket of their own,
// so a stranger's flood of unsigned requests cannot spend the signed sender's.

const require = createRequire(import.meta.url);
const Stripe = require("stripe") as new (
  key: string,
) => {
  webhooks: { generateTestHeaderString(options: { payload: string; secret: string; timestamp?: number }): string };
};
const stripe = new Stripe("sk_test_not_used");
const secret = "whsec_rate_limit_test_secret";

// The buckets refill only when the test moves this clock; Stripe's timestamps are checked against it too.
const clock = new ManualClock();

const test = testWith({ server: { clock, config: { role: "api" } } });

const signed = (payload: string) => ({
  "stripe-signature": stripe.webhooks.generateTestHeaderString({
    payload,
    secret,
    timestamp: Math.floor(clock.now().getTime() / 1000),
  }),
});

test("an unsigned flood gets 401 then 429 from its own bucket; the signed sender's requests are all accepted", async ({ server }) => {
  const source = await insertWebhookSource(server, { verifier: "stripe", secret, maxRequestsPerSecond: 10 });
  const strangers: number[] = [];
  const sender: number[] = [];
  for (let i = 0; i < 10; i++) {
    // Three strangers' requests (none signed, one with a forged signature) before each of the sender's.
    strangers.push((await postHook(source.url, `{"id":"evt_x${i}"}`)).status);
    strangers.push((await postHook(source.url, `{"id":"evt_y${i}"}`)).status);
    strangers.push((await postHook(source.url, `{"id":"evt_z${i}"}`, { "stripe-signature": "t=1,v1=00" })).status);
    const body = `{"id":"evt_${i}"}`;
    sender.push((await postHook(source.url, body, signed(body))).status);
  }
  expect(sender).toEqual(Array(10).fill(200));
  expect(strangers.filter((s) => s === 401)).toHaveLength(10);
  expect(strangers.filter((s) => s === 429)).toHaveLength(20);
  expect(await hookRows(server, source.id)).toHaveLength(10);

  // The sender's own limit still holds: an 11th signed request in the same second is a 429.
  const eleventh = await postHook(source.url, '{"id":"evt_10"}', signed('{"id":"evt_10"}'));
  expect(eleventh.status).toBe(429);
  expect(eleventh.headers["retry-after"]).toBe("1");
});

test("a refused request's 429 says so, and both buckets refill with time", async ({ server }) => {
  const source = await insertWebhookSource(server, { verifier: "stripe", secret, maxRequestsPerSecond: 2 });
  expect((await postHook(source.url, "{}")).status).toBe(401);
  expect((await postHook(source.url, "{}")).status).toBe(401);
  const over = await postHook(source.url, "{}");
  expect(over.status).toBe(429);
  expect(JSON.parse(over.text).error).toContain("refused");
  clock.advance(1000);
  expect((await postHook(source.url, "{}")).status).toBe(401);
  expect((await postHook(source.url, '{"id":"a"}', signed('{"id":"a"}'))).status).toBe(200);
});

test("a request without the verifier's header is refused before its body is read", async ({ server }) => {
  const source = await insertWebhookSource(server, { verifier: "stripe", secret, maxRequestsPerSecond: 5 });
  const req = openUpload(source.url, { "content-length": 10 * 1024 * 1024 });
  const answer = answerOf(req);
  req.write("{");
  // Only an answer given without reading the 10 MB body can arrive.
  expect(await answer).toMatchObject({ status: 401, text: '{"accepted":false,"error":"missing Stripe-Signature header"}' });
  req.destroy();
});

test("basic and token verifiers are judged on the headers alone, and a wrong credential spends only the refused bucket", async ({
  server,
}) => {
  const source = await insertWebhookSource(server, { verifier: "token", secret: "right-token", maxRequestsPerSecond: 1 });
  const wrong = { authorization: "Bearer wrong-token" };
  expect((await postHook(source.url, "{}", wrong)).status).toBe(401);
  expect((await postHook(source.url, "{}", wrong)).status).toBe(429);
  expect((await postHook(source.url, "{}", { authorization: "Bearer right-token" })).status).toBe(200);
  expect((await postHook(source.url, "{}", { authorization: "Bearer right-token" })).status).toBe(429);
});
