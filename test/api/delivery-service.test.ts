import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { DeliveryStatus, DeliveryView } from "../../gen/waypost/v1/delivery_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { startReceiver } from "../helpers/receiver.js";

const test = testWith({ receiver: { respond: () => ({ status: 200, body: "x".repeat(5000) }) } });
let destinationId: string;
let failedDestinationId: string;

test.beforeAll(async ({ server, receiver: ok }) => {
  const bad = await startReceiver({ respond: () => ({ status: 422, body: "bad \u0000 payload" }) });
  const source = await server.createSource();
  destinationId = (await server.createDestination({ name: "ok", sourceIds: [source.id], webhooks: [{ url: ok.url }] })).id;
  failedDestinationId = (await server.createDestination({ name: "bad", sourceIds: [source.id], webhooks: [{ url: bad.url }] })).id;
  const done = server.waitForDeliveries(10);
  const client = server.tracking(source.writeKey);
  for (let i = 0; i < 5; i++) await client.track({ track: { userId: "u", event: `e${i}` } });
  await done;
  await bad.close();
});

test("ListDeliveries pages newest first and filters by status", async ({ server }) => {
  const seen: string[] = [];
  let pageToken = "";
  do {
    const page = await server.deliveries.listDeliveries({ destinationId, pageSize: 2, pageToken });
    seen.push(...page.deliveries.map((d) => d.id));
    for (const d of page.deliveries) {
      expect(d.status).toBe(DeliveryStatus.DELIVERED);
      expect(d.messageId).not.toBe("");
      expect(d.attempts).toHaveLength(1);
    }
    pageToken = page.nextPageToken;
  } while (pageToken);
  expect(seen).toHaveLength(5);
  expect([...seen].sort((a, b) => Number(b) - Number(a))).toEqual(seen);
  const failed = await server.deliveries.listDeliveries({ destinationId: failedDestinationId, status: DeliveryStatus.FAILED });
  expect(failed.deliveries).toHaveLength(5);
  const none = await server.deliveries.listDeliveries({ destinationId, status: DeliveryStatus.FAILED });
  expect(none.deliveries).toHaveLength(0);
});

test("GetDelivery shows each attempt, with at most 1 KB of the response body", async ({ server, receiver: ok }) => {
  const { deliveries } = await server.deliveries.listDeliveries({ destinationId, pageSize: 1 });
  const { delivery } = await server.deliveries.getDelivery({ id: deliveries[0]!.id });
  const attempt = delivery!.attempts[0]!;
  expect(attempt.url).toBe(ok.url);
  expect(attempt.statusCode).toBe(200);
  expect(attempt.responseBody).toHaveLength(1024);
  expect(attempt.latencyMs).toBeGreaterThanOrEqual(0);
  const failed = await server.deliveries.listDeliveries({ destinationId: failedDestinationId, pageSize: 1 });
  expect(failed.deliveries[0]!.attempts[0]!.responseBody).toBe("bad \uFFFD payload");
});

test("RetryDelivery refuses a delivered one; unknown ids are not found", async ({ server }) => {
  const { deliveries } = await server.deliveries.listDeliveries({ destinationId, pageSize: 1 });
  const refused = await server.deliveries.retryDelivery({ id: deliveries[0]!.id }).catch((e) => ConnectError.from(e));
  expect((refused as ConnectError).code).toBe(Code.FailedPrecondition);
  const missing = await server.deliveries.getDelivery({ id: "999999999" }).catch((e) => ConnectError.from(e));
  expect((missing as ConnectError).code).toBe(Code.NotFound);
  const malformed = await server.deliveries.getDelivery({ id: "abc" }).catch((e) => ConnectError.from(e));
  expect((malformed as ConnectError).code).toBe(Code.InvalidArgument);
});

test("GetDestinationStats counts by status and attempts in the last hour", async ({ server }) => {
  const stats = await server.deliveries.getDestinationStats({ destinationId });
  expect(stats.delivered).toBe(5n);
  expect(stats.failed).toBe(0n);
  expect(stats.attemptsLastHour).toBe(5n);
  expect(stats.successfulAttemptsLastHour).toBe(5n);
  const failed = await server.deliveries.getDestinationStats({ destinationId: failedDestinationId });
  expect(failed.failed).toBe(5n);
  expect(failed.successfulAttemptsLastHour).toBe(0n);
});

test("/metrics has per-destination delivery counts and latency", async ({ server }) => {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  expect(text).toContain(`waypost_deliveries_total{destination_id="${destinationId}",status="delivered"} 5`);
  expect(text).toContain(`waypost_deliveries_total{destination_id="${failedDestinationId}",status="failed"} 5`);
  expect(text).toMatch(new RegExp(`waypost_delivery_attempt_duration_seconds_count\\{destination_id="${destinationId}"\\} 5`));
  expect(text).toContain('waypost_calls_accepted_total{type="track"} 5');
});

test("every view carries the last attempt's error; a delivered one has none", async ({ server }) => {
  const [basicFailed, fullFailed, basicOk] = await Promise.all([
    server.deliveries.listDeliveries({ destinationId: failedDestinationId, view: DeliveryView.BASIC, pageSize: 5 }),
    server.deliveries.listDeliveries({ destinationId: failedDestinationId, pageSize: 5 }),
    server.deliveries.listDeliveries({ destinationId, view: DeliveryView.BASIC, pageSize: 5 }),
  ]);
  expect(basicFailed.deliveries).toHaveLength(5);
  for (const d of basicFailed.deliveries) {
    expect(d.attempts).toEqual([]);
    expect(d.lastError).toBe("HTTP 422");
  }
  expect(fullFailed.deliveries.map((d) => d.lastError)).toEqual(basicFailed.deliveries.map((d) => d.lastError));
  expect(basicOk.deliveries.map((d) => d.lastError)).toEqual(["", "", "", "", ""]);
});
