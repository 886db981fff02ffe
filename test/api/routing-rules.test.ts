import { createHmac } from "node:crypto";
import { ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { AttemptOutcome, DeliveryStatus } from "../../gen/waypost/v1/delivery_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { completionsOf, type TestServer } from "../helpers/server.js";
import { verifyStandardWebhook } from "../helpers/standard-webhooks.js";

const test = testWith({ server: { config: { transform: { timeoutMs: 200, memoryMb: 16, workers: 2 } } } });

async function refusal(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (error) {
    return ConnectError.from(error).rawMessage;
  }
  throw new Error("not refused");
}

async function deliveriesOf(server: TestServer, destinationId: string) {
  const { deliveries } = await server.deliveries.listDeliveries({ destinationId, pageSize: 100 });
  return deliveries;
}

test("create and update refuse bad rules, naming the path", async ({ server, receiver }) => {
  const source = await server.createSource();
  const base = { name: "bad", sourceIds: [source.id], webhooks: [{ url: receiver.url }] };
  const create = (extra: object) => server.destinations.createDestination({ destination: { ...base, ...extra } });
  expect(await refusal(create({ filter: { "properties.total": { $gte: "100" } } }))).toBe(
    "destination.filter.properties.total.$gte: must be a number",
  );
  expect(await refusal(create({ filter: { $or: [{ type: { $like: "t%" } }] } }))).toMatch(
    /^destination\.filter\.\$or\[0\]\.type\.\$like: unknown operator/,
  );
  expect(await refusal(create({ dropFields: ["context..ip"] }))).toMatch(/^destination\.dropFields\[0\]: /);
  expect(await refusal(create({ transform: "function transform(e) {\n  return e +;\n}" }))).toMatch(
    /^destination\.transform: SyntaxError: .* \(line 2\)$/,
  );
  expect(await refusal(create({ transform: `// ${"x".repeat(70_000)}\nfunction transform(e) { return e }` }))).toMatch(
    /^destination\.transform: is \d+ bytes, over the limit of 65536 bytes/,
  );
  const made = await server.createDestination({ ...base, filter: { type: "track" }, dropFields: ["context.ip"] });
  expect(made.filter).toEqual({ type: "track" });
  expect(made.dropFields).toEqual(["context.ip"]);
  const update = server.destinations.updateDestination({
    destination: { id: made.id, filter: { event: { $in: "Order Completed" } } },
    updateMask: { paths: ["filter"] },
  });
  expect(await refusal(update)).toBe("destination.filter.event.$in: must be an array");
  const { destination } = await server.destinations.updateDestination({
    destination: { id: made.id, transform: "function transform(e) { return e }" },
    updateMask: { paths: ["transform"] },
  });
  expect(destination!.transform).toBe("function transform(e) { return e }");
  expect(destination!.filter).toEqual({ type: "track" });
});

test("a filtered call creates no delivery and is counted; drops and a transform change the body the signatures cover", async ({
  server,
  receiver,
}) => {
  const source = await server.createSource();
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const destination = await server.createDestination({
    name: "orders over 100",
    sourceIds: [source.id],
    webhooks: [{ url: `${receiver.url}/orders` }],
    sharedSecret: "shh",
    signingSecrets: [secret],
    filter: { type: "track", event: "Order Completed", "properties.total": { $gt: 100 } },
    dropFields: ["properties.email", "context.ip"],
    transform: "function transform(e) { e.event = 'order'; e.properties.currency = 'EUR'; return e }",
  });
  const tracking = server.tracking(source.writeKey);
  const before = receiver.requests.length;
  const done = completionsOf(server, destination.id, 1);
  const { messageIds } = await tracking.batch({
    batch: [
      { type: { case: "track", value: { userId: "u1", event: "Order Completed", properties: { total: 50 } } } },
      { type: { case: "identify", value: { userId: "u1", traits: { plan: "pro" } } } },
      {
        type: {
          case: "track",
          value: { userId: "u1", event: "Order Completed", properties: { total: 150, email: "a@b.c" }, context: { ip: "1.2.3.4" } },
        },
      },
    ],
  });
  const [completion] = await done;
  expect(completion!.status).toBe("delivered");
  const request = receiver.requests.slice(before).find((r) => r.path.endsWith("/orders"))!;
  const body = JSON.parse(request.body);
  expect(body).toMatchObject({ type: "track", event: "order", messageId: messageIds[2], properties: { total: 150, currency: "EUR" } });
  expect(body.properties.email).toBeUndefined();
  expect(body.context?.ip).toBeUndefined();
  expect(request.headers["x-signature"]).toBe(createHmac("sha1", "shh").update(request.body).digest("hex"));
  expect(verifyStandardWebhook(secret, request, new Date())).toMatchObject({ event: "order" });

  const deliveries = await deliveriesOf(server, destination.id);
  expect(deliveries.map((d) => d.messageId)).toEqual([messageIds[2]]);
  const { delivery } = await server.deliveries.getDelivery({ id: deliveries[0]!.id });
  expect(delivery!.body).toBe(request.body);
  expect(delivery!.attempts[0]!.destinationEtag).toBe(destination.etag);

  const stats = await server.deliveries.getDestinationStats({ destinationId: destination.id });
  expect(stats.filteredLast24h).toBe(2n);
  expect(stats.windows[0]!.filtered).toBe(2n);
  expect(stats.series.reduce((n, m) => n + m.filtered, 0n)).toBe(2n);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  expect(metrics).toContain(`waypost_calls_filtered_total{destination_id="${destination.id}",reason="filter"} 2`);
});

test("a filter changed in another process is noticed by ingest's cache at once", async ({ server, receiver }) => {
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "changing",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    enabled: false,
    filter: { type: "identify" },
  });
  const tracking = server.tracking(source.writeKey);
  await tracking.track({ track: { userId: "u", event: "one" } });
  // Behind the API's back, as another process would.
  await server.pool.query(`UPDATE destinations SET filter = '{"type":"track"}', revision = revision + 1 WHERE id = $1`, [destination.id]);
  await server.pool.query("UPDATE destinations SET enabled = true, revision = revision + 1 WHERE id = $1", [destination.id]);
  const { messageId } = await tracking.track({ track: { userId: "u", event: "two" } });
  const deliveries = await deliveriesOf(server, destination.id);
  expect(deliveries.map((d) => d.messageId)).toEqual([messageId]);
});

test.for<[string, string, RegExp]>([
  ["an endless loop", "function transform(e) { for (;;) {} }", /^transform: ran longer than 200 ms( of CPU time$| \(5000 ms of wall time)/],
  [
    "a memory bomb",
    "function transform(e) { const a = []; for (;;) a.push(new Array(1e5).fill(e)); }",
    /^transform: (ran out of memory|ran longer)/,
  ],
  ["a throw", "function transform(e) { throw new Error('no ' + e.event) }", /^transform: Error: no Hostile \(line 1\)$/],
  ["reaching for the host", "function transform(e) { return require('child_process') }", /^transform: ReferenceError: .*require/],
  ["a non-object result", "function transform(e) { return 42 }", /^transform: TypeError: must return a plain object or null, not number/],
  [
    "a result over 32 KB",
    "function transform(e) { e.pad = 'x'.repeat(40000); return e }",
    /^transform: the result is \d+ bytes, over the limit/,
  ],
])(
  "a transform with %s fails only its delivery, permanently; another destination's deliveries still flow",
  async ([_name, source, error], { server, receiver }) => {
    const src = await server.createSource();
    const hostile = await server.createDestination({
      name: "hostile",
      sourceIds: [src.id],
      webhooks: [{ url: `${receiver.url}/hostile` }],
      transform: source,
    });
    const healthy = await server.createDestination({
      name: "healthy",
      sourceIds: [src.id],
      webhooks: [{ url: `${receiver.url}/healthy` }],
    });
    const done = Promise.all([completionsOf(server, hostile.id, 1), completionsOf(server, healthy.id, 1)]);
    await server.tracking(src.writeKey).track({ track: { userId: "u", event: "Hostile" } });
    const [[hostileDone], [healthyDone]] = await done;
    expect(healthyDone!.status).toBe("delivered");
    expect(hostileDone!.status).toBe("failed");
    const [failed] = await deliveriesOf(server, hostile.id);
    const { delivery } = await server.deliveries.getDelivery({ id: failed!.id });
    expect(delivery!.status).toBe(DeliveryStatus.FAILED);
    expect(delivery!.attempts[0]!.outcome).toBe(AttemptOutcome.PERMANENT);
    expect(delivery!.attempts[0]!.error).toMatch(error);
    expect(receiver.requests.some((r) => r.path.endsWith("/hostile"))).toBe(false);
    // The process still serves calls and delivers them.
    const again = completionsOf(server, healthy.id, 1);
    await server.destinations.updateDestination({ destination: { id: hostile.id, enabled: false }, updateMask: { paths: ["enabled"] } });
    await server.tracking(src.writeKey).track({ track: { userId: "u", event: "After" } });
    expect((await again)[0]!.status).toBe("delivered");
  },
);

test("a transform that returns null drops the call: counted as filtered, reason transform", async ({ server, receiver }) => {
  const src = await server.createSource();
  const destination = await server.createDestination({
    name: "drops pages",
    sourceIds: [src.id],
    webhooks: [{ url: `${receiver.url}/drops` }],
    transform: "function transform(e) { return e.type === 'page' ? null : e }",
  });
  const done = completionsOf(server, destination.id, 1);
  const { messageId } = await server.tracking(src.writeKey).page({ page: { userId: "u", name: "Home" } });
  await done;
  const explained = await server.deliveries.explainMessage({ messageId });
  expect(explained.destinations.find((d) => d.destinationId === destination.id)).toMatchObject({ reason: "transform" });
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  expect(metrics).toContain(`waypost_calls_filtered_total{destination_id="${destination.id}",reason="transform"} 1`);
  expect(receiver.requests.some((r) => r.path.endsWith("/drops"))).toBe(false);
});
