import { readFileSync } from "node:fs";
import { afterAll, expect, test } from "vitest";
import type { Call } from "../../../src/calls/call.js";
import type { HookRequestRow } from "../../../src/db/queries/hook-requests.js";
import { callsOfHookRequest, hookSandboxKey } from "../../../src/ingest/hooks/hook-calls.js";
import { createTransformSandboxes } from "../../../src/sandbox/transform-sandbox.js";

// The transform templates of docs/webhook-sources.md, taken from the page
// itself and run the way processing runs a source's transform (the real
// sandbox, then each call read and validated like a /v1 call) on a sample
// request of each sender: the page's code works as written.

const page = readFileSync(new URL("../../../docs/webhook-sources.md", import.meta.url), "utf8");
const sandboxes = createTransformSandboxes({ timeoutMs: 200, memoryMb: 16, workers: 1 });
afterAll(() => sandboxes.close());
const receivedAt = new Date("2026-11-28T12:00:00Z");
const received = receivedAt.toISOString();

/** The ```js block under `### <name>` in `## Templates`. */
function template(name: string): string {
  const section = page.split(/^## /m).find((part) => part.startsWith("Templates\n"));
  const sub = section?.split(/^### /m).find((part) => part.startsWith(`${name}\n`));
  const code = sub && /```js\n([\s\S]*?)```/.exec(sub)?.[1];
  if (!code) throw new Error(`no template "${name}" in docs/webhook-sources.md`);
  return code;
}

let nextId = 1;

/** A stored request as receipt keeps it. */
function request(body: unknown, headers: Record<string, string> = {}): HookRequestRow {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return {
    id: String(nextId++),
    source_id: "00000000-0000-4000-8000-000000000001",
    received_at: receivedAt,
    method: "POST",
    query: "",
    content_type: typeof body === "string" ? "application/x-www-form-urlencoded" : "application/json",
    headers: { "Content-Type": "application/json", ...headers },
    body: Buffer.from(text),
    idempotency_key: null,
    status: "pending",
    error: null,
    message_ids: [],
    attempts: 0,
    processed_at: null,
    traceparent: null,
    tracestate: null,
  };
}

/** The parts of a call the templates set (empty fields left out), its timestamp as ISO text. */
function shown(call: Call): Record<string, unknown> {
  const out: Record<string, unknown> = { type: call.type };
  if (call.userId) out.userId = call.userId;
  if (call.anonymousId) out.anonymousId = call.anonymousId;
  if (call.event) out.event = call.event;
  if (call.timestamp) out.timestamp = call.timestamp.toISOString();
  if (call.properties) out.properties = call.properties;
  if (call.traits) out.traits = call.traits;
  return out;
}

/** The calls the template makes from the request, as processing makes them; a failure throws its error. */
async function run(code: string, row: HookRequestRow): Promise<Array<Record<string, unknown>>> {
  const made = await callsOfHookRequest(row, { verifier: "none", transform: code }, hookSandboxKey(row.source_id, code), {
    sandboxes,
  });
  if (!made.ok) throw new Error(made.error);
  expect(made.calls.map((call) => call.messageId)).toEqual(made.calls.map((_, index) => `hook-${row.id}-${index}`));
  return made.calls.map(shown);
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
      timestamp: "2026-11-28T10:00:00.000Z",
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
      timestamp: received,
      properties: { repository: "acme/app", ref: "refs/heads/main", commits: 2, forced: false },
    },
  ]);
  // GitHub's other content type: the same JSON form-encoded as `payload`.
  const formPr = new URLSearchParams({ payload: JSON.stringify(pr(true)) }).toString();
  expect(await run(code, request(formPr, { "x-github-event": "pull_request" }))).toEqual(merged);
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
      timestamp: "2026-11-28T14:00:00.000Z",
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
    {
      type: "track",
      userId: "42",
      event: "Ticket Closed",
      timestamp: received,
      properties: { event: "Ticket Closed", user_id: 42, priority: "high" },
    },
  ]);
  const batch = await run(code, request([{ type: "lead.created", email: "a@example.com" }, { note: "no user" }], { "x-request-id": "r9" }));
  expect(batch).toEqual([
    {
      type: "track",
      userId: "a@example.com",
      event: "lead.created",
      timestamp: received,
      properties: { type: "lead.created", email: "a@example.com" },
    },
    { type: "track", anonymousId: "r9-1", event: "Webhook Received", timestamp: received, properties: { note: "no user" } },
  ]);
  await expect(run(code, { ...request("a=b"), content_type: "text/plain" })).rejects.toThrow(/the body is not JSON/);
});
