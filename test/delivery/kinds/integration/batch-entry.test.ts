import { afterAll, beforeAll, expect, test } from "vitest";
import { DeliveryStatus } from "../../../../gen/waypost/v1/delivery_pb.js";
import { DestinationKind } from "../../../../gen/waypost/v1/destination_pb.js";
import { startTestServer, type TestServer } from "../../../helpers/server.js";
import { startVendorStandIn, type VendorStandIn } from "../../../helpers/vendor-stand-in.js";

// A real entry's batch form through the proxy: Klaviyo's upsertProfile with
// batching on. Calls arrive as the catalog's bulk import request; the
// catalog's per-item status of a call it refuses (no email, phone or
// external id) fails that call alone.
let vendor: VendorStandIn;
let server: TestServer;

beforeAll(async () => {
  vendor = await startVendorStandIn();
  server = await startTestServer({
    config: { outbound: { httpsProxy: vendor.proxyUrl }, delivery: { integrationFlushMs: 1_000 } },
    ca: vendor.caPem,
  });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await vendor?.close();
});

test("three identifies make one bulk import request of the two valid profiles; the third fails alone", async () => {
  vendor.respond((request) =>
    request.path.startsWith("/api/profile-bulk-import-jobs") ? { status: 202, body: '{"data":{"id":"job-1"}}' } : undefined,
  );
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "klaviyo",
    sourceIds: [source.id],
    kind: DestinationKind.INTEGRATION,
    integration: {
      slug: "klaviyo",
      settings: { api_key: "pk_batch_test_5511" },
      subscriptions: [
        { name: "Profiles", subscribe: 'type = "identify"', action: "upsertProfile", mapping: { enable_batching: true } },
      ] as never,
    },
  });
  const tracking = server.tracking(source.writeKey);
  const before = vendor.requests.length;
  const sent = await Promise.all([
    tracking.identify({ identify: { userId: "u1", traits: { email: "ada@example.com" } } }),
    tracking.identify({ identify: { userId: "u2", traits: { name: "No Email" } } }),
    tracking.identify({ identify: { userId: "u3", traits: { email: "grace@example.com" } } }),
  ]);
  // Klaviyo's batches hold at least 100: the three go together when the flush interval (a second) is up.
  await server.waitForDeliveries(3, ["delivered", "failed"]);
  const requests = vendor.requests.slice(before);
  expect(requests.map((r) => `${r.method} ${r.host}${r.path}`)).toEqual(["POST a.klaviyo.com/api/profile-bulk-import-jobs/"]);
  const profiles = (
    JSON.parse(requests[0]!.body) as { data: { attributes: { profiles: { data: Array<{ attributes: { email: string } }> } } } }
  ).data.attributes.profiles.data;
  expect(profiles.map((p) => p.attributes.email).sort()).toEqual(["ada@example.com", "grace@example.com"]);
  expect(requests[0]!.headers.authorization).toBe("Klaviyo-API-Key pk_batch_test_5511");

  const { deliveries } = await server.deliveries.listDeliveries({ destinationId: destination.id });
  const byMessage = new Map(deliveries.map((d) => [d.messageId, d]));
  expect(byMessage.get(sent[0].messageId)?.status).toBe(DeliveryStatus.DELIVERED);
  expect(byMessage.get(sent[2].messageId)?.status).toBe(DeliveryStatus.DELIVERED);
  const refused = byMessage.get(sent[1].messageId)!;
  expect(refused.status).toBe(DeliveryStatus.FAILED);
  const { delivery } = await server.deliveries.getDelivery({ id: refused.id });
  expect(delivery!.attempts.map((a) => [a.subscription, a.method, a.statusCode])).toEqual([["Profiles", "", 0]]);
  expect(delivery!.attempts[0]!.error).toMatch(/^subscription "Profiles": .*(email|phone|external)/i);
  const { delivery: ok } = await server.deliveries.getDelivery({ id: byMessage.get(sent[0].messageId)!.id });
  expect(ok!.attempts.map((a) => [a.subscription, a.method, a.statusCode, a.url])).toEqual([
    ["Profiles", "POST", 202, "https://a.klaviyo.com/api/profile-bulk-import-jobs/"],
  ]);
  // The page shows the batch's request as sent (the API key masked), and which operation it was: shared by the calls it carried.
  const [request] = ok!.attempts;
  expect(request!.requestBody).toBe(requests[0]!.body);
  expect(request!.requestBodyBytes).toBe(Buffer.byteLength(requests[0]!.body));
  expect(request!.requestHeaders.authorization).toBe("***");
  expect(request!.batchCalls).toBe(3);
  const { delivery: other } = await server.deliveries.getDelivery({ id: byMessage.get(sent[2].messageId)!.id });
  expect(other!.attempts[0]!.batchId).toBe(request!.batchId);
  expect(request!.batchDeliveryIds).toEqual([byMessage.get(sent[2].messageId)!.id]);
  expect(request!.batchId).not.toBe("");
  expect(ok!.requestsInAttempts).toBe(true);
});
