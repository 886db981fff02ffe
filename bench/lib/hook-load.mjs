// @ts-check
import { createHmac } from "node:crypto";
import { Pool } from "undici";

/**
 * A Stripe-style event body of about 600 bytes, `n` making it unique (its `id`, the idempotency key).
 * @param {number} n
 * @param {string} tag
 */
export function stripeEvent(n, tag) {
  return JSON.stringify({
    id: `evt_${tag}_${n}`,
    object: "event",
    type: "payment_intent.succeeded",
    created: 1764320000,
    livemode: false,
    data: {
      object: {
        id: `pi_${tag}_${n}`,
        object: "payment_intent",
        amount: 4250,
        currency: "eur",
        customer: `cus_${n % 5000}`,
        status: "succeeded",
        metadata: { order_id: String(n), plan: "pro" },
      },
    },
  });
}

/**
 * The Stripe-Signature header for `body`, as Stripe signs: HMAC-SHA256 of `${t}.${body}`.
 * @param {string} secret
 * @param {string} body
 * @param {number} [t] seconds
 */
export function stripeSignature(secret, body, t = Math.floor(Date.now() / 1000)) {
  return `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;
}

/**
 * POSTs signed Stripe-style events to `url` from `concurrency` loops over
 * keep-alive connections for `durationMs`; resolves with the requests
 * answered 2xx, the others, and the time taken.
 * @param {{ url: string, secret: string, durationMs: number, concurrency?: number, tag: string }} options
 */
export async function postHooks({ url, secret, durationMs, concurrency = 32, tag }) {
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections: concurrency, pipelining: 1 });
  let accepted = 0;
  let refused = 0;
  let n = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const body = stripeEvent(n++, tag);
        const { statusCode, body: answer } = await pool.request({
          method: "POST",
          path: target.pathname,
          headers: { "content-type": "application/json", "stripe-signature": stripeSignature(secret, body) },
          body,
        });
        await answer.dump();
        if (statusCode >= 200 && statusCode < 300) accepted++;
        else refused++;
      }
    }),
  );
  const elapsedMs = performance.now() - start;
  await pool.close();
  return { accepted, refused, elapsedMs };
}
