import { toJsonString } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { createHmac, randomBytes } from "node:crypto";
import { expect } from "vitest";
import { DeliveryOrder, DeliveryStatus, DeliveryView, GetDeliveryResponseSchema, type Delivery } from "../../gen/waypost/v1/delivery_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { startReceiver } from "../helpers/receiver.js";
import type { TestServer } from "../helpers/server.js";

const test = testWith();
let okId: string;
let badId: string;
const secret = "s3cret-shared";
const messageIds: string[] = [];

test.beforeAll(async ({ server, receiver: ok }) => {
  const bad = await startReceiver({ respond: () => ({ status: 422, body: "no" }) });
  const source = await server.createSource();
  okId = (
    await server.createDestination({
      name: "ok",
      sourceIds: [source.id],
      sharedSecret: secret,
      signingSecrets: [`whsec_${randomBytes(32).toString("base64")}`],
      webhooks: [
        { url: ok.url, headers: { Authorization: "Bearer hunter2", "X-Api-Key": "k-123", "X-Team": "growth" } },
        { url: `${ok.url}?second`, headers: { "X-Session-Token": "session-token-xyz" } },
      ],
    })
  ).id;
  badId = (await server.createDestination({ name: "bad", sourceIds: [source.id], webhooks: [{ url: bad.url }] })).id;
  const client = server.tracking(source.writeKey);
  for (let i = 0; i < 6; i++) {
    // One at a time, so creation times are in call order.
    const done = server.waitForDeliveries(2);
    const user = i % 2 === 0 ? "alice" : "bob";
    const { messageId } = await client.track({ track: { userId: user, anonymousId: `anon-${i}`, event: `e${i}` } });
    messageIds.push(messageId);
    await done;
  }
  await bad.close();
});

async function listAll(server: TestServer, request: Parameters<TestServer["deliveries"]["listDeliveries"]>[0]): Promise<Delivery[]> {
  const all: Delivery[] = [];
  let pageToken = "";
  do {
    const page = await server.deliveries.listDeliveries({ ...request, pageToken });
    all.push(...page.deliveries);
    pageToken = page.nextPageToken;
  } while (pageToken);
  return all;
}

test("filters by messageId and userId, in one destination or all", async ({ server }) => {
  const one = await listAll(server, { destinationId: okId, messageId: messageIds[2]! });
  expect(one.map((d) => d.messageId)).toEqual([messageIds[2]]);
  expect(one[0]!.userId).toBe("alice");
  expect(one[0]!.anonymousId).toBe("anon-2");
  const everywhere = await listAll(server, { messageId: messageIds[2]! });
  expect(everywhere.map((d) => d.destinationId).sort()).toEqual([okId, badId].sort());
  const bob = await listAll(server, { destinationId: badId, userId: "bob" });
  expect(bob.map((d) => d.messageId)).toEqual([messageIds[5], messageIds[3], messageIds[1]]);
  expect(bob.every((d) => d.status === DeliveryStatus.FAILED)).toBe(true);
  expect(await listAll(server, { userId: "nobody" })).toEqual([]);
  expect(await listAll(server, { messageId: "no-such-message" })).toEqual([]);
});

test("every destination, newest first, paged; statuses are a union", async ({ server }) => {
  const all = await listAll(server, { pageSize: 5 });
  expect(all).toHaveLength(12);
  const times = all.map((d) => timestampDate(d.createTime!).getTime());
  expect([...times].sort((a, b) => b - a)).toEqual(times);
  expect(new Set(all.map((d) => d.id)).size).toBe(12);
  const both = await listAll(server, { statuses: [DeliveryStatus.FAILED, DeliveryStatus.DELIVERED] });
  expect(both).toHaveLength(12);
  const delivered = await listAll(server, { status: DeliveryStatus.DELIVERED });
  expect(delivered.map((d) => d.destinationId)).toEqual(Array(6).fill(okId));
});

test("since and until bound the creation time", async ({ server }) => {
  const all = await listAll(server, { destinationId: okId });
  const oldestFirst = [...all].reverse();
  const since = oldestFirst[2]!.createTime!;
  const until = oldestFirst[4]!.createTime!;
  const window = await listAll(server, { destinationId: okId, since, until });
  expect(window.map((d) => d.messageId)).toEqual([messageIds[3], messageIds[2]]);
  const after = await listAll(server, { since });
  expect(after).toHaveLength(8);
  const before = await listAll(server, { destinationId: badId, until });
  expect(before.map((d) => d.messageId)).toEqual([messageIds[3], messageIds[2], messageIds[1], messageIds[0]]);
});

test("a delivery carries the exact body sent and the headers sent, secrets masked", async ({ server, receiver: ok }) => {
  const [delivery] = await listAll(server, { destinationId: okId, messageId: messageIds[0]! });
  const sent = ok.requests.find((r) => r.body === delivery!.body);
  expect(sent, "the receiver got exactly this body").toBeDefined();
  expect(JSON.parse(delivery!.body).messageId).toBe(messageIds[0]);
  // The signature really was sent, and is masked here.
  expect(sent!.headers["x-signature"]).toBe(createHmac("sha1", secret).update(sent!.body).digest("hex"));
  const { "webhook-timestamp": timestamp, ...rest } = delivery!.requestHeaders;
  expect(rest).toEqual({
    Authorization: "[masked]",
    "X-Api-Key": "[masked]",
    "X-Team": "growth",
    "user-agent": "Waypost/1.0",
    "content-type": "application/json",
    "x-signature": "[masked]",
    // Standard Webhooks: the signature masked, the id and timestamp shown.
    "webhook-signature": "[masked]",
    "webhook-id": messageIds[0],
  });
  // The latest attempt's time, to the second (signed when the attempt was prepared, a moment before).
  expect(Math.abs(Number(timestamp) - Number(sent!.headers["webhook-timestamp"]))).toBeLessThanOrEqual(1);
  expect(sent!.headers["webhook-signature"]).toMatch(/^v1,/);
  // Every sent header is shown, with the same value unless masked.
  for (const [name, value] of Object.entries(delivery!.requestHeaders)) {
    if (value !== "[masked]" && name !== "webhook-timestamp") expect(sent!.headers[name.toLowerCase()]).toBe(value);
  }
  expect(delivery!.webhookHeaders.map((w) => w.url)).toEqual([ok.url, `${ok.url}?second`]);
  expect(delivery!.webhookHeaders[1]!.headers["X-Session-Token"]).toBe("[masked]");
  const text = toJsonString(GetDeliveryResponseSchema, await server.deliveries.getDelivery({ id: delivery!.id }));
  for (const leaked of [
    "hunter2",
    "k-123",
    "session-token-xyz",
    secret,
    sent!.headers["x-signature"] as string,
    sent!.headers["webhook-signature"] as string,
  ]) {
    expect(text).not.toContain(leaked);
  }
});

test("the basic view leaves out body, headers and attempts", async ({ server }) => {
  const { deliveries } = await server.deliveries.listDeliveries({ destinationId: okId, view: DeliveryView.BASIC, pageSize: 1 });
  expect(deliveries[0]!.body).toBe("");
  expect(deliveries[0]!.attempts).toEqual([]);
  expect(deliveries[0]!.requestHeaders).toEqual({});
  expect(deliveries[0]!.userId).not.toBe("");
});

test("bad filters and tokens are invalid_argument naming the field", async ({ server }) => {
  const error = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
  const cases: Array<[Promise<unknown>, RegExp]> = [
    [server.deliveries.listDeliveries({ destinationId: "nope" }), /destinationId/],
    [
      server.deliveries.listDeliveries({
        since: timestampFromDate(new Date(2026, 1, 2)),
        until: timestampFromDate(new Date(2026, 1, 1)),
      }),
      /until: must be after since/,
    ],
    [server.deliveries.listDeliveries({ pageToken: "garbage!" }), /pageToken/],
    [server.deliveries.listDeliveries({ statuses: [DeliveryStatus.UNSPECIFIED] }), /statuses\[0\]/],
    [server.deliveries.listDeliveries({ messageId: "m".repeat(1001) }), /messageId/],
  ];
  for (const [promise, message] of cases) {
    const e = await error(promise);
    expect(e?.code).toBe(Code.InvalidArgument);
    expect(e?.rawMessage).toMatch(message);
  }
  // A creation-order token is refused by the finish feed, and the other way round.
  const page = await server.deliveries.listDeliveries({ pageSize: 1 });
  const feed = await server.deliveries.listDeliveries({ order: DeliveryOrder.FINISH_TIME_DESC });
  expect(
    (await error(server.deliveries.listDeliveries({ order: DeliveryOrder.FINISH_TIME_DESC, pageToken: page.nextPageToken })))?.code,
  ).toBe(Code.InvalidArgument);
  expect((await error(server.deliveries.listDeliveries({ pageToken: feed.nextPageToken })))?.code).toBe(Code.InvalidArgument);
});
