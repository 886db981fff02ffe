import { createHmac, randomBytes } from "node:crypto";
import { expect } from "vitest";
import { AttemptOutcome, DeliveryStatus, DeliveryView } from "../../../gen/waypost/v1/delivery_pb.js";
import { ManualClock } from "../../../src/clock.js";
import { batchWebhookId } from "../../../src/delivery/kinds/webhook/batch-split.js";
import { healthConfig } from "../../health/support.js";
import { testWith } from "../../helpers/fixtures.js";
import type { TestServer } from "../../helpers/server.js";
import { startReceiver, type ReceivedRequest, type Receiver } from "../../helpers/receiver.js";
import { completionsOf } from "../../helpers/server.js";
import { verifyStandardWebhook } from "../../helpers/standard-webhooks.js";

const clock = new ManualClock(new Date("2026-12-06T10:00:00Z"));
const receivers: Receiver[] = [];

const test = testWith({ server: { clock, config: healthConfig() } });
test.afterEach(async ({ server }) => {
  await server.waypost.delivery!.settle();
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

/** A receiver that takes bodies up to `limit` bytes and refuses larger ones with `refusal`. */
async function limitedReceiver(limit: number, refusal: { status: number; body?: string }) {
  const r = await startReceiver({
    respond: (request) => (Buffer.byteLength(request.body) > limit ? refusal : { status: 200, body: "ok" }),
  });
  receivers.push(r);
  return r;
}

const messageIdsIn = (request: ReceivedRequest): string[] =>
  (JSON.parse(request.body).batch as Array<{ messageId: string }>).map((call) => call.messageId);

/** A call's attempts as its delivery shows them (GetDelivery), in order. */
async function attemptsOf(server: TestServer, messageId: string, destinationId: string) {
  const { deliveries } = await server.deliveries.listDeliveries({ destinationId, messageId });
  expect(deliveries).toHaveLength(1);
  const { delivery } = await server.deliveries.getDelivery({ id: deliveries[0]!.id });
  return delivery!.attempts.map((a) => ({
    outcome: a.outcome,
    statusCode: a.statusCode,
    error: a.error,
    batchDeliveryIds: a.batchDeliveryIds,
  }));
}

/** Sends `small` calls and one large one (at position `at`) to a destination batching them all into one POST. */
async function oneBatchWithALargeCall(server: TestServer, url: string, small: number, at: number, extra = {}) {
  const source = await server.createSource();
  const batch = { maxCalls: small + 1, maxWaitMs: 60_000 };
  const destination = await server.createDestination({ name: "split", sourceIds: [source.id], webhooks: [{ url, batch }], ...extra });
  const client = server.tracking(source.writeKey);
  const finished = completionsOf(server, destination.id, small + 1);
  const innocent: string[] = [];
  let large = "";
  for (let i = 0; i <= small; i++) {
    const pad = i === at ? "L".repeat(6_000) : "s".repeat(100);
    const { messageId } = await client.track({ track: { userId: `u${i}`, event: "E", properties: { pad } } });
    if (i === at) large = messageId;
    else innocent.push(messageId);
  }
  return { destination, innocent, large, completions: await finished };
}

test("a batch refused with 413 is sent again in halves down to one: only the call too large alone fails; each POST is signed and an attempt of its own", async ({
  server,
}) => {
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  const r = await limitedReceiver(4_000, { status: 413, body: "Payload Too Large" });
  const { destination, innocent, large, completions } = await oneBatchWithALargeCall(server, r.url, 40, 17, {
    signingSecrets: [secret],
    sharedSecret: "shh",
  });

  const statusOf = new Map(completions.map((c) => [c.id, c.status]));
  expect([...statusOf.values()].filter((s) => s === "delivered")).toHaveLength(40);
  expect([...statusOf.values()].filter((s) => s === "failed")).toHaveLength(1);

  // Every POST, refused or not, is signed over its own bytes, with an id of its own.
  for (const request of r.requests) {
    expect(verifyStandardWebhook(secret, request, clock.now())).toEqual(JSON.parse(request.body));
    expect(request.headers["x-signature"]).toBe(createHmac("sha1", "shh").update(request.body).digest("hex"));
  }
  const ids = r.requests.map((request) => request.headers["webhook-id"]);
  expect(new Set(ids).size).toBe(ids.length);

  // Each innocent call was taken exactly once; the large one never.
  const taken = r.requests.filter((request) => Buffer.byteLength(request.body) <= 4_000).flatMap(messageIdsIn);
  expect(taken.sort()).toEqual([...innocent].sort());
  // The large call went alone in the end.
  expect(r.requests.some((request) => messageIdsIn(request).join() === large)).toBe(true);

  for (const id of innocent) {
    const attempts = await attemptsOf(server, id, destination.id);
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(attempts.at(-1)).toMatchObject({ outcome: AttemptOutcome.SUCCESS, statusCode: 200 });
    for (const refused of attempts.slice(0, -1)) {
      expect(refused).toMatchObject({ outcome: AttemptOutcome.PERMANENT, statusCode: 413 });
      expect(refused.error).toMatch(/as too large: sent again in smaller batches/);
    }
  }
  // A list of deliveries shows each innocent call's POST that took it, not a refused one: no error.
  const { deliveries: listed } = await server.deliveries.listDeliveries({ destinationId: destination.id, view: DeliveryView.BASIC });
  const delivered = listed.filter((d) => d.status === DeliveryStatus.DELIVERED);
  expect(delivered.map((d) => d.messageId).sort()).toEqual([...innocent].sort());
  expect(delivered.map((d) => d.lastError)).toEqual(Array(40).fill(""));
  const largeAttempts = await attemptsOf(server, large, destination.id);
  expect(largeAttempts.every((a) => a.outcome === AttemptOutcome.PERMANENT && a.statusCode === 413)).toBe(true);
  // The first POST carried all 41, the other 40 listed with it; the last carried the large call alone and is final.
  expect(largeAttempts[0]!.error).toMatch(/\(41 calls\)/);
  expect(largeAttempts[0]!.batchDeliveryIds).toHaveLength(40);
  expect(largeAttempts.at(-1)!.error).toBe("");
  expect(largeAttempts.at(-1)!.batchDeliveryIds).toEqual([]);
});

test("a 400 whose body says the payload is too large splits too; a plain 400 fails the whole batch", async ({ server }) => {
  const tooLarge = await limitedReceiver(2_000, { status: 400, body: '{"error":"request entity too large"}' });
  const split = await oneBatchWithALargeCall(server, tooLarge.url, 6, 0);
  expect(split.completions.filter((c) => c.status === "delivered")).toHaveLength(6);
  expect(split.completions.find((c) => c.status !== "delivered")?.status).toBe("failed");

  const refusing = await limitedReceiver(2_000, { status: 400, body: '{"error":"missing field"}' });
  const whole = await oneBatchWithALargeCall(server, refusing.url, 6, 0);
  expect(whole.completions.map((c) => c.status)).toEqual(Array(7).fill("failed"));
  expect(refusing.requests).toHaveLength(1);
});

test("a batch's webhook-id is the same for the same calls in any order, another for any other set, and a well-formed UUID", () => {
  const destination = "7a1c0c56-0d43-4e0b-9d7e-2f1f3c1f0a11";
  const id = batchWebhookId(destination, ["1", "2", "3"]);
  expect(batchWebhookId(destination, ["3", "1", "2"])).toBe(id);
  expect(batchWebhookId(destination, ["1", "2"])).not.toBe(id);
  expect(batchWebhookId(destination, ["12", "3"])).not.toBe(batchWebhookId(destination, ["1", "23"]));
  expect(batchWebhookId("00000000-0000-4000-8000-000000000001", ["1", "2", "3"])).not.toBe(id);
  expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});
