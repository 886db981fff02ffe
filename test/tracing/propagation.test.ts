import { describe, expect } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { testWith } from "../helpers/fixtures.js";
import type { Receiver } from "../helpers/receiver.js";
import type { TestServer } from "../helpers/server.js";
import { newTraceparent, protocols, setupRoute, trackWith } from "./support.js";

// Tracing off (no OTLP endpoint): the trace context a call came with goes
// out unchanged on every webhook request for it.
const clock = new ManualClock(new Date("2026-11-25T10:00:00Z"));
const test = testWith({ server: { clock } });
const receivers: Receiver[] = [];

test.afterEach(async ({ server }) => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  await server.waypost.delivery!.settle();
});

async function route(server: TestServer, respond?: Parameters<typeof setupRoute>[1]) {
  const routed = await setupRoute(server, respond);
  receivers.push(routed.receiver);
  return routed;
}

async function storedContext(server: TestServer, messageId: string) {
  const { rows } = await server.pool.query("SELECT traceparent, tracestate FROM messages WHERE message_id = $1", [messageId]);
  return rows[0] as { traceparent: string | null; tracestate: string | null };
}

describe.each(protocols)("over %s", (protocol) => {
  test("the incoming traceparent and tracestate reach the receiver as they came; a call without them is sent without", async ({
    server,
  }) => {
    const { receiver, source } = await route(server);
    const { traceparent } = newTraceparent();
    const tracestate = "vendor=abc,other=x:y";
    await trackWith(server, protocol, source.writeKey, { traceparent, tracestate });
    const [withContext] = await receiver.waitForRequests(1);
    expect(withContext!.headers.traceparent).toBe(traceparent);
    expect(withContext!.headers.tracestate).toBe(tracestate);
    const messageId = await trackWith(server, protocol, source.writeKey, {});
    const without = (await receiver.waitForRequests(2))[1]!;
    expect(without.headers.traceparent).toBeUndefined();
    expect(without.headers.tracestate).toBeUndefined();
    expect(await storedContext(server, messageId)).toEqual({ traceparent: null, tracestate: null });
  });
});

test("a malformed traceparent is ignored: the call is accepted, nothing is stored or sent", async ({ server }) => {
  const { receiver, source } = await route(server);
  const { traceId, parentId } = newTraceparent();
  const malformed = [
    `00-${traceId.toUpperCase()}-${parentId}-01`,
    `00-${"0".repeat(32)}-${parentId}-01`,
    `00-${traceId}-${"0".repeat(16)}-01`,
    `ff-${traceId}-${parentId}-01`,
    `00-${traceId}-${parentId}-01-extra`,
    `00-${traceId}-${parentId}`,
    `00-${traceId}-${parentId}-01${"x".repeat(10_000)}`,
  ];
  const ids: string[] = [];
  for (const traceparent of malformed) ids.push(await trackWith(server, "v1", source.writeKey, { traceparent, tracestate: "a=b" }));
  for (const traceparent of malformed.slice(0, 3)) ids.push(await trackWith(server, "connect", source.writeKey, { traceparent }));
  const requests = await receiver.waitForRequests(ids.length);
  for (const request of requests) expect(request.headers.traceparent).toBeUndefined();
  for (const id of ids) expect(await storedContext(server, id)).toEqual({ traceparent: null, tracestate: null });
  // A valid one after them is read: the refusals above were the format's, not the reader's.
  const valid = newTraceparent().traceparent;
  const validId = await trackWith(server, "v1", source.writeKey, { traceparent: valid });
  expect((await receiver.waitForRequests(ids.length + 1))[ids.length]!.headers.traceparent).toBe(valid);
  expect((await storedContext(server, validId)).traceparent).toBe(valid);
});

test("a tracestate over 512 characters is dropped, the traceparent kept", async ({ server }) => {
  const { receiver, source } = await route(server);
  const { traceparent } = newTraceparent();
  await trackWith(server, "v1", source.writeKey, { traceparent, tracestate: `a=${"b".repeat(600)}` });
  const [request] = await receiver.waitForRequests(1);
  expect(request!.headers.traceparent).toBe(traceparent);
  expect(request!.headers.tracestate).toBeUndefined();
});

test("a batch's calls each carry the request's context", async ({ server }) => {
  const { receiver, source } = await route(server);
  const { traceparent } = newTraceparent();
  const response = await fetch(`${server.url}/v1/batch`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Basic ${Buffer.from(`${source.writeKey}:`).toString("base64")}`,
      traceparent,
    },
    body: JSON.stringify({ batch: [1, 2, 3].map((n) => ({ type: "track", userId: `u${n}`, event: "E" })) }),
  });
  expect(response.status).toBe(200);
  const requests = await receiver.waitForRequests(3);
  expect(requests.map((r) => r.headers.traceparent)).toEqual([traceparent, traceparent, traceparent]);
});

test("every retry of a delivery carries the same traceparent", async ({ server }) => {
  const { receiver, source } = await route(server, (_, index) => ({ status: index === 0 ? 503 : 200 }));
  const { traceparent } = newTraceparent();
  const retrying = server.waitForDeliveries(1, ["retrying"]);
  const messageId = await trackWith(server, "connect", source.writeKey, { traceparent, tracestate: "k=v" });
  await retrying;
  const { rows } = await server.pool.query(
    "SELECT d.run_at FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE m.message_id = $1",
    [messageId],
  );
  clock.set(rows[0].run_at);
  const delivered = server.waitForDeliveries(1, ["delivered"]);
  server.waypost.delivery!.poke();
  await delivered;
  const requests = await receiver.waitForRequests(2);
  expect(requests.map((r) => [r.headers.traceparent, r.headers.tracestate])).toEqual([
    [traceparent, "k=v"],
    [traceparent, "k=v"],
  ]);
});

test("a webhook cannot have a static traceparent or tracestate header: they are the call's", async ({ server }) => {
  const source = await server.createSource();
  for (const name of ["traceparent", "Tracestate"]) {
    await expect(
      server.createDestination({
        name: "static trace header",
        sourceIds: [source.id],
        webhooks: [{ url: "http://127.0.0.1:9/hook", headers: { [name]: "00-x" } }],
      }),
    ).rejects.toThrow(new RegExp(name, "i"));
  }
});
