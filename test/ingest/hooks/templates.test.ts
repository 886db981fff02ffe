import { readFileSync } from "node:fs";
import { afterAll, expect, test } from "vitest";
import { createTransformSandboxes } from "../../../src/routing/transform-sandbox.js";

// The transform templates of docs/webhook-sources.md, taken from the page
// itself and run through the real sandbox on a sample request of each
// sender: the page's code works as written.

const page = readFileSync(new URL("../../../docs/webhook-sources.md", import.meta.url), "utf8");
const sandboxes = createTransformSandboxes({ timeoutMs: 200, memoryMb: 16, workers: 1 });
afterAll(() => sandboxes.close());

/** The ```js block under `### <name>` in `## Templates`. */
function template(name: string): string {
  const section = page.split(/^## /m).find((part) => part.startsWith("Templates\n"));
  const sub = section?.split(/^### /m).find((part) => part.startsWith(`${name}\n`));
  const code = sub && /```js\n([\s\S]*?)```/.exec(sub)?.[1];
  if (!code) throw new Error(`no template "${name}" in docs/webhook-sources.md`);
  return code;
}

interface HookRequestShape {
  method: string;
  headers: Record<string, string>;
  query: Record<string, string>;
  body: unknown;
  rawBody: string;
}

function request(body: unknown, headers: Record<string, string> = {}): HookRequestShape {
  const rawBody = JSON.stringify(body);
  return { method: "POST", headers: { "content-type": "application/json", ...headers }, query: {}, body, rawBody };
}

/**
 * Runs a webhook transform in the destination sandbox, which takes one
 * object and gives one back: the request's calls come back wrapped in an
 * object (the sandbox refuses a bare array).
 */
async function run(code: string, input: HookRequestShape): Promise<Array<Record<string, unknown>>> {
  const wrapped = `${code}
;(function () {
  const own = transform;
  globalThis.transform = function (request) { return { calls: own(request) }; };
})();`;
  const outcome = await sandboxes.run(`template-${code.length}`, wrapped, JSON.stringify(input));
  if (outcome.kind !== "send") throw new Error(`the transform failed: ${JSON.stringify(outcome)}`);
  const { calls } = JSON.parse(outcome.body) as { calls: unknown };
  expect(Array.isArray(calls)).toBe(true);
  return calls as Array<Record<string, unknown>>;
}

test("the page has the four templates", () => {
  for (const name of ["Stripe", "GitHub", "Shopify", "Generic JSON"]) expect(template(name)).toContain("function transform(request)");
});

test("Stripe: payment_intent.succeeded is a Payment Succeeded track; customer.created an identify; others nothing", async () => {
  const code = template("Stripe");
  const paid = await run(
    code,
    request({
      id: "evt_1",
      type: "payment_intent.succeeded",
      created: 1_764_000_000,
      data: { object: { id: "pi_1", amount: 2500, amount_received: 2500, currency: "eur", customer: "cus_9", description: "Pro plan" } },
    }),
  );
  expect(paid).toEqual([
    {
      type: "track",
      userId: "cus_9",
      event: "Payment Succeeded",
      timestamp: "2025-11-24T16:00:00.000Z",
      properties: { paymentIntentId: "pi_1", amount: 25, currency: "eur", description: "Pro plan" },
    },
  ]);
  const guest = await run(
    code,
    request({
      id: "evt_2",
      type: "payment_intent.succeeded",
      created: 1_764_000_000,
      data: { object: { id: "pi_2", amount: 999, amount_received: 999, currency: "usd", customer: null } },
    }),
  );
  expect(guest[0]).toMatchObject({ anonymousId: "pi_2", properties: { amount: 9.99, currency: "usd" } });
  expect(guest[0]).not.toHaveProperty("userId");
  const customer = await run(
    code,
    request({
      id: "evt_3",
      type: "customer.created",
      created: 1_764_000_000,
      data: { object: { id: "cus_9", email: "ada@example.com", name: "Ada" } },
    }),
  );
  expect(customer).toEqual([
    {
      type: "identify",
      userId: "cus_9",
      timestamp: "2025-11-24T16:00:00.000Z",
      traits: { email: "ada@example.com", name: "Ada", createdAt: "2025-11-24T16:00:00.000Z" },
    },
  ]);
  expect(await run(code, request({ id: "evt_4", type: "charge.refunded", created: 1, data: { object: { id: "ch_1" } } }))).toEqual([]);
});

test("GitHub: a merged pull request and a push; a closed unmerged one makes no call", async () => {
  const code = template("GitHub");
  const pr = (merged: boolean) => ({
    action: "closed",
    number: 7,
    repository: { full_name: "acme/app" },
    sender: { login: "octocat" },
    pull_request: {
      number: 7,
      title: "Fix the thing",
      merged,
      merged_at: merged ? "2026-11-28T10:00:00Z" : null,
      merged_by: merged ? { login: "hubot" } : null,
      base: { ref: "main" },
      additions: 10,
      deletions: 2,
    },
  });
  const merged = await run(code, request(pr(true), { "x-github-event": "pull_request", "x-github-delivery": "d-1" }));
  expect(merged).toEqual([
    {
      type: "track",
      userId: "octocat",
      event: "Pull Request Merged",
      timestamp: "2026-11-28T10:00:00Z",
      properties: {
        repository: "acme/app",
        number: 7,
        title: "Fix the thing",
        base: "main",
        mergedBy: "hubot",
        additions: 10,
        deletions: 2,
      },
    },
  ]);
  expect(await run(code, request(pr(false), { "x-github-event": "pull_request" }))).toEqual([]);
  const push = await run(
    code,
    request(
      {
        ref: "refs/heads/main",
        forced: false,
        commits: [{ id: "a" }, { id: "b" }],
        repository: { full_name: "acme/app" },
        sender: { login: "octocat" },
      },
      { "x-github-event": "push" },
    ),
  );
  expect(push).toEqual([
    {
      type: "track",
      userId: "octocat",
      event: "Code Pushed",
      properties: { repository: "acme/app", ref: "refs/heads/main", commits: 2, forced: false },
    },
  ]);
});

test("Shopify: orders/create is Order Completed with its products; other topics nothing", async () => {
  const code = template("Shopify");
  const order = {
    id: 820982911946154500,
    email: "jon@example.com",
    created_at: "2026-11-28T09:00:00-05:00",
    currency: "USD",
    total_price: "199.65",
    total_tax: "11.94",
    customer: { id: 115310627314723950 },
    line_items: [
      { product_id: 632910392, sku: "IPOD2008PINK", title: "IPod Nano - 8gb", price: "199.00", quantity: 1 },
      { product_id: 632910393, sku: "CASE", title: "Case", price: "0.65", quantity: 2 },
    ],
  };
  const calls = await run(code, request(order, { "x-shopify-topic": "orders/create" }));
  expect(calls).toEqual([
    {
      type: "track",
      userId: String(order.customer.id),
      event: "Order Completed",
      timestamp: "2026-11-28T09:00:00-05:00",
      properties: {
        orderId: String(order.id),
        total: 199.65,
        tax: 11.94,
        currency: "USD",
        email: "jon@example.com",
        products: [
          { productId: "632910392", sku: "IPOD2008PINK", name: "IPod Nano - 8gb", price: 199, quantity: 1 },
          { productId: "632910393", sku: "CASE", name: "Case", price: 0.65, quantity: 2 },
        ],
      },
    },
  ]);
  expect(await run(code, request(order, { "x-shopify-topic": "orders/updated" }))).toEqual([]);
});

test("generic JSON: one object or a batch, each a track with its user; a body that is not JSON fails", async () => {
  const code = template("Generic JSON");
  expect(await run(code, request({ event: "Ticket Closed", user_id: 42, priority: "high" }))).toEqual([
    { type: "track", userId: "42", event: "Ticket Closed", properties: { event: "Ticket Closed", user_id: 42, priority: "high" } },
  ]);
  const batch = await run(code, request([{ type: "lead.created", email: "a@example.com" }, { note: "no user" }], { "x-request-id": "r9" }));
  expect(batch).toEqual([
    { type: "track", userId: "a@example.com", event: "lead.created", properties: { type: "lead.created", email: "a@example.com" } },
    { type: "track", anonymousId: "r9-1", event: "Webhook Received", properties: { note: "no user" } },
  ]);
  const notJson: HookRequestShape = { method: "POST", headers: {}, query: {}, body: undefined, rawBody: "a=b" };
  await expect(run(code, notJson)).rejects.toThrow(/the body is not JSON/);
});
