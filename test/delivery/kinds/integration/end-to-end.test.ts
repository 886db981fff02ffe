import { expect } from "vitest";
import { DeliveryStatus } from "../../../../gen/waypost/v1/delivery_pb.js";
import { DestinationKind, TestOutcome } from "../../../../gen/waypost/v1/destination_pb.js";
import { testWith } from "../../../helpers/fixtures.js";
import type { TestServer } from "../../../helpers/server.js";

// The integration kind through a real server: created over RPC with the
// catalog's Webhook entry, calls tracked, delivered by the loop, read back
// over RPC with each attempt's subscription and method; TestDestination
// shows the requests and sends nothing.
let base: string;

const test = testWith({ server: { config: { delivery: { integrationFlushMs: 50 } } } });
test.beforeAll(async ({ receiver }) => {
  base = receiver.url.replace(/\/hook$/, "");
});

const secret = "whsec-0123456789-abcdef";

async function createIntegration(server: TestServer, sourceId: string, subscriptions: Array<Record<string, unknown>>) {
  return server.createDestination({
    name: "vendor",
    sourceIds: [sourceId],
    kind: DestinationKind.INTEGRATION,
    integration: { slug: "webhook", settings: { sharedSecret: secret }, subscriptions: subscriptions as never },
  });
}

test("calls are delivered by the loop, each attempt named by subscription and method, secrets masked", async ({ server, receiver }) => {
  const source = await server.createSource();
  const destination = await createIntegration(server, source.id, [
    { name: "Track Calls", subscribe: 'type = "track"', action: "send", mapping: { url: `${base}/track?token=${secret}` } },
    { name: "Orders", subscribe: 'event = "Order Completed"', action: "send", mapping: { url: `${base}/orders`, method: "PUT" } },
  ]);
  const before = receiver.requests.length;
  const { messageId } = await server
    .tracking(source.writeKey)
    .track({ track: { userId: "u", event: "Order Completed", properties: { total: 3 } } });
  await receiver.waitForRequests(before + 2);
  await server.waitForDeliveries(1, ["delivered"]);
  const { deliveries } = await server.deliveries.listDeliveries({ destinationId: destination.id });
  expect(deliveries).toHaveLength(1);
  expect(deliveries[0]!.status).toBe(DeliveryStatus.DELIVERED);
  const { delivery } = await server.deliveries.getDelivery({ id: deliveries[0]!.id });
  const attempts = [...delivery!.attempts].sort((a, b) => a.subscription.localeCompare(b.subscription));
  expect(attempts.map((a) => [a.subscription, a.method, a.statusCode])).toEqual([
    ["Orders", "PUT", 200],
    ["Track Calls", "POST", 200],
  ]);
  expect(attempts[1]!.url).toBe(`${base}/track?token=***`);
  const sent = receiver.requests.slice(before).find((r) => r.path.startsWith("/track"))!;
  expect(JSON.parse(sent.body)).toMatchObject({ messageId, event: "Order Completed", properties: { total: 3 } });
});

test("GetDelivery shows each attempt's request as sent (method, URL, masked headers, body), not the stored call", async ({
  server,
  receiver,
}) => {
  const source = await server.createSource();
  const destination = await createIntegration(server, source.id, [
    {
      name: "Mapped",
      subscribe: 'type = "track"',
      action: "send",
      mapping: {
        url: `${base}/mapped`,
        method: "PUT",
        headers: { "X-Key": secret },
        data: { user: { "@path": "$.userId" }, event: { "@path": "$.event" }, props: { "@path": "$.properties" } },
      },
    },
  ]);
  const before = receiver.requests.length;
  await server.tracking(source.writeKey).track({ track: { userId: "u9", event: "Viewed", properties: { page: "/ü" } } });
  await receiver.waitForRequests(before + 1);
  await server.waitForDeliveries(1, ["delivered"]);
  const received = receiver.requests.slice(before).find((r) => r.path === "/mapped")!;
  const { deliveries } = await server.deliveries.listDeliveries({ destinationId: destination.id });
  const { delivery } = await server.deliveries.getDelivery({ id: deliveries[0]!.id });
  expect(delivery!.requestsInAttempts).toBe(true);
  const [attempt] = delivery!.attempts;
  expect(attempt!.method).toBe("PUT");
  expect(attempt!.requestBody).toBe(received.body);
  expect(JSON.parse(attempt!.requestBody)).toEqual({ user: "u9", event: "Viewed", props: { page: "/ü" } });
  expect(attempt!.requestBodyBytes).toBe(Buffer.byteLength(received.body));
  expect(attempt!.requestHeaders["x-key"]).toBe("***");
  expect(attempt!.requestHeaders["content-type"]).toBe(received.headers["content-type"]);
  expect(attempt!.batchId).toBe("");
});

test("TestDestination: the requests each matching subscription would send, secrets masked, nothing sent; an action's refusal", async ({
  server,
  receiver,
}) => {
  const source = await server.createSource();
  const tracking = server.tracking(source.writeKey);
  const identify = await tracking.identify({ identify: { userId: "u", traits: { plan: "pro" } } });
  const track = await tracking.track({ track: { userId: "u", event: "Signed Up" } });
  const before = receiver.requests.length;
  const { calls } = await server.destinations.testDestination({
    destination: {
      sourceIds: [source.id],
      kind: DestinationKind.INTEGRATION,
      integration: {
        slug: "webhook",
        settings: { sharedSecret: secret },
        subscriptions: [
          {
            name: "Track Calls",
            subscribe: 'type = "track"',
            action: "send",
            mapping: { url: `${base}/t?key=${secret}`, headers: { "X-Key": secret } },
          },
          { name: "Identify Calls", subscribe: 'type = "identify"', action: "send", mapping: { url: { "@path": "$.traits.missing" } } },
        ] as never,
      },
    },
  });
  const byId = new Map(calls.map((c) => [c.messageId, c]));
  const tracked = byId.get(track.messageId)!;
  expect(tracked.outcome).toBe(TestOutcome.SEND);
  expect(tracked.requests).toHaveLength(1);
  const [request] = tracked.requests;
  expect(request).toMatchObject({ subscription: "Track Calls", method: "POST", url: `${base}/t?key=***` });
  expect(request!.headers["x-key"]).toBe("***");
  expect(request!.headers["content-type"]).toBe("application/json");
  expect(JSON.parse(request!.body)).toMatchObject({ type: "track", event: "Signed Up", messageId: track.messageId });
  const identified = byId.get(identify.messageId)!;
  expect(identified.outcome).toBe(TestOutcome.ACTION_ERROR);
  expect(identified.error).toMatch(/^subscription "Identify Calls": .*url/i);
  expect(receiver.requests.length).toBe(before);
});
