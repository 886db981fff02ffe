import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { describe, expect } from "vitest";
import { PlanMode, TrackingPlanService, ViolationKind } from "../../gen/waypost/v1/tracking_plan_pb.js";
import { testWith } from "../helpers/fixtures.js";
import type { Receiver } from "../helpers/receiver.js";
import { ManualClock } from "../../src/clock.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { adminTransport } from "./support.js";
import { checkoutPlan } from "./fixtures.js";

const test = testWith();
let plans: Client<typeof TrackingPlanService>;

test.beforeAll(async ({ server }) => {
  plans = createClient(TrackingPlanService, adminTransport(server));
});

/** A new source with a destination and the checkout plan in `mode`. */
async function sourceWithPlan(server: TestServer, receiver: Receiver, mode: PlanMode) {
  const source = await server.createSource(`plan-${mode}`);
  await server.createDestination({ name: `hook-${mode}`, sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  await plans.setTrackingPlan({ sourceId: source.id, plan: checkoutPlan, mode });
  return source;
}

async function compat(server: TestServer, writeKey: string, path: string, body: unknown) {
  const response = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

async function storedBodies(server: TestServer, sourceId: string): Promise<Array<Record<string, unknown>>> {
  const result = await server.pool.query("SELECT payload FROM messages WHERE source_id = $1 ORDER BY id", [sourceId]);
  return result.rows.map((row) => JSON.parse(row.payload));
}

const goodOrder = { total: 12.5, currency: "EUR" };
const badOrder = { total: "12.50", currency: "EUR", gift: true };

describe("block", () => {
  test("a violating call is rejected over RPC and /v1 with the plan's reason; a good one is stored", async ({ server, receiver }) => {
    const source = await sourceWithPlan(server, receiver, PlanMode.BLOCK);
    const tracking = server.tracking(source.writeKey);
    const error = await tracking
      .track({ track: { userId: "u1", event: "Order Completed", properties: badOrder } })
      .catch((e) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect((error as ConnectError).rawMessage).toContain("violates the tracking plan: properties.total: must be number");

    const batch = await tracking.batch({
      batch: [
        { type: { case: "track", value: { userId: "u1", event: "Order Completed", properties: goodOrder } } },
        { type: { case: "track", value: { userId: "u1", event: "Unknown Event" } } },
      ],
    });
    expect(batch.accepted).toBe(1);
    expect(batch.rejected).toEqual([
      expect.objectContaining({ index: 1, reason: "violates the tracking plan: event: is not an event of the plan" }),
    ]);

    const single = await compat(server, source.writeKey, "/v1/track", {
      userId: "u1",
      event: "Order Completed",
      properties: { currency: "EUR" },
    });
    expect(single.status).toBe(400);
    expect(String(single.json.message)).toContain("violates the tracking plan: properties.total: is required");
    const ok = await compat(server, source.writeKey, "/v1/track", { userId: "u1", event: "Order Completed", properties: goodOrder });
    expect(ok).toEqual({ status: 200, json: { success: true } });

    const batchAnswer = await compat(server, source.writeKey, "/v1/batch", {
      batch: [
        { type: "track", userId: "u1", event: "Order Completed", properties: goodOrder },
        { type: "identify", userId: "u1", traits: { age: 3.5 } },
      ],
    });
    expect(batchAnswer).toEqual({
      status: 200,
      json: {
        success: true,
        accepted: 1,
        rejected: [{ index: 1, field: "traits", reason: "violates the tracking plan: traits.age: must be integer" }],
        rejectedCount: 1,
      },
    });

    const stored = await storedBodies(server, source.id);
    expect(stored.map((b) => b.properties)).toEqual([goodOrder, goodOrder, goodOrder]);
  });

  test("binary (protobuf) requests are checked as JSON ones are", async ({ server, receiver }) => {
    const source = await sourceWithPlan(server, receiver, PlanMode.BLOCK);
    const { createConnectTransport } = await import("@connectrpc/connect-node");
    const transport = createConnectTransport({
      baseUrl: server.url,
      httpVersion: "1.1",
      useBinaryFormat: true,
      interceptors: [
        (next) => (req) => {
          req.header.set("authorization", `Bearer ${source.writeKey}`);
          return next(req);
        },
      ],
    });
    const { TrackingService } = await import("../../gen/waypost/v1/tracking_pb.js");
    const client = createClient(TrackingService, transport);
    const error = await client
      .track({ track: { userId: "u1", event: "Order Completed", properties: badOrder } })
      .catch((e) => ConnectError.from(e));
    expect((error as ConnectError).rawMessage).toContain("violates the tracking plan: properties.total: must be number");
    await client.track({ track: { userId: "u1", event: "Order Completed", properties: goodOrder } });
    expect((await storedBodies(server, source.id)).map((b) => b.properties)).toEqual([goodOrder]);
  });
});

describe("observe and omit", () => {
  test("observe delivers the call unchanged and records its violations", async ({ server, receiver }) => {
    const source = await sourceWithPlan(server, receiver, PlanMode.OBSERVE);
    await server.tracking(source.writeKey).track({ track: { userId: "u1", event: "Order Completed", properties: badOrder } });
    expect((await storedBodies(server, source.id)).map((b) => b.properties)).toEqual([badOrder]);
    const { violations } = await plans.listViolations({ sourceId: source.id });
    expect(violations.map((v) => [v.event, v.path, v.kind, v.message, v.example, v.count])).toEqual(
      expect.arrayContaining([
        ["Order Completed", "properties.total", ViolationKind.WRONG_TYPE, "must be number", '"12.50"', 1n],
        ["Order Completed", "properties.gift", ViolationKind.UNPLANNED_PROPERTY, "is not in the plan", "true", 1n],
      ]),
    );
    expect(violations).toHaveLength(2);
  });

  test("omit delivers without the properties and traits the plan does not name", async ({ server, receiver }) => {
    const source = await sourceWithPlan(server, receiver, PlanMode.OMIT);
    const tracking = server.tracking(source.writeKey);
    const before = receiver.requests.length;
    await tracking.track({ track: { userId: "omit-user", event: "Order Completed", properties: { ...goodOrder, gift: true } } });
    await compat(server, source.writeKey, "/v1/identify", { userId: "omit-user", traits: { email: "a@example.com", nickname: "al" } });
    // Other tests' deliveries may arrive meanwhile: wait for this user's two calls, however many come.
    let bodies: Array<Record<string, unknown>> = [];
    for (let count = before + 2; bodies.length < 2; count++) {
      const received = await receiver.waitForRequests(count);
      bodies = received.map((r) => JSON.parse(r.body) as Record<string, unknown>).filter((b) => b.userId === "omit-user");
    }
    const track = bodies.find((b) => b.type === "track");
    const identify = bodies.find((b) => b.type === "identify");
    expect(track?.properties).toEqual(goodOrder);
    expect(identify?.traits).toEqual({ email: "a@example.com" });
    const kinds = (await plans.listViolations({ sourceId: source.id })).violations.map((v) => [v.callType, v.path, v.kind]);
    expect(kinds).toEqual(
      expect.arrayContaining([
        ["track", "properties.gift", ViolationKind.UNPLANNED_PROPERTY],
        ["identify", "traits.nickname", ViolationKind.UNPLANNED_PROPERTY],
      ]),
    );
  });

  test("off records nothing and changes nothing", async ({ server, receiver }) => {
    const source = await sourceWithPlan(server, receiver, PlanMode.OFF);
    await server.tracking(source.writeKey).track({ track: { userId: "u1", event: "Nope", properties: badOrder } });
    expect((await storedBodies(server, source.id)).map((b) => b.properties)).toEqual([badOrder]);
    expect((await plans.listViolations({ sourceId: source.id })).violations).toEqual([]);
  });
});

test("every violation kind is recorded, with counts, first and last seen and a capped example; /metrics counts them", async ({
  server,
  receiver,
}) => {
  const source = await sourceWithPlan(server, receiver, PlanMode.OBSERVE);
  const tracking = server.tracking(source.writeKey);
  const long = "x".repeat(500);
  for (let i = 0; i < 3; i++) {
    await tracking.track({ track: { userId: "u1", event: "Order Completed", properties: { total: long, currency: "GBP", extra: 1 } } });
  }
  await tracking.track({ track: { userId: "u1", event: "Order Completed", properties: {} } });
  await tracking.track({ track: { userId: "u1", event: "Refunded" } });
  const { violations } = await plans.listViolations({ sourceId: source.id });
  const byKind = new Map(violations.map((v) => [v.kind, v]));
  expect(byKind.get(ViolationKind.WRONG_TYPE)).toMatchObject({ path: "properties.total", count: 3n });
  expect(byKind.get(ViolationKind.WRONG_TYPE)!.example.length).toBeLessThanOrEqual(200);
  expect(byKind.get(ViolationKind.OTHER)).toMatchObject({ path: "properties.currency", count: 3n, example: '"GBP"' });
  expect(byKind.get(ViolationKind.UNPLANNED_PROPERTY)).toMatchObject({ path: "properties.extra", count: 3n });
  expect(byKind.get(ViolationKind.UNPLANNED_EVENT)).toMatchObject({ event: "Refunded", path: "event", count: 1n });
  expect(
    violations
      .filter((v) => v.kind === ViolationKind.REQUIRED_MISSING)
      .map((v) => v.path)
      .sort(),
  ).toEqual(["properties.currency", "properties.total"]);
  const wrong = byKind.get(ViolationKind.WRONG_TYPE)!;
  expect(wrong.firstSeen).toBeDefined();
  expect(wrong.lastSeen).toBeDefined();
  const since = await plans.listViolations({
    sourceId: source.id,
    since: { seconds: BigInt(Math.floor(Date.now() / 1000) + 3600), nanos: 0 },
  });
  expect(since.violations).toEqual([]);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  expect(metrics).toContain(`waypost_plan_violations_total{source_id="${source.id}",kind="wrong_type"} 3`);
  expect(metrics).toContain(`waypost_plan_violations_total{source_id="${source.id}",kind="unplanned_event"} 1`);
});

describe("setting plans", () => {
  test("an invalid plan is invalid_argument naming the path", async ({ server }) => {
    const source = await server.createSource("invalid-plan");
    const bad = { events: { "Order Completed": { properties: { type: "object", properties: { total: { type: "nubmer" } } } } } };
    const error = await plans.setTrackingPlan({ sourceId: source.id, plan: bad }).catch((e) => ConnectError.from(e));
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect((error as ConnectError).rawMessage).toContain('plan.events["Order Completed"].properties.properties.total.type');
    const typo = await plans.setTrackingPlan({ sourceId: source.id, plan: { event: {} } }).catch((e) => ConnectError.from(e));
    expect((typo as ConnectError).rawMessage).toContain("plan.event: is not part of a plan");
    const unknownKeyword = await plans
      .setTrackingPlan({ sourceId: source.id, plan: { page: { properties: { tpye: "object" } } } })
      .catch((e) => ConnectError.from(e));
    expect((unknownKeyword as ConnectError).code).toBe(Code.InvalidArgument);
    expect((unknownKeyword as ConnectError).rawMessage).toContain("plan.page.properties");
    expect((await plans.getTrackingPlan({ sourceId: source.id })).trackingPlan).toMatchObject({ mode: PlanMode.OFF, etag: "" });
  });

  test("a stale etag is aborted; the current one replaces the plan, and an unspecified mode keeps the mode", async ({ server }) => {
    const source = await server.createSource("etag");
    const first = (await plans.setTrackingPlan({ sourceId: source.id, plan: checkoutPlan, mode: PlanMode.OBSERVE })).trackingPlan!;
    const second = (await plans.setTrackingPlan({ sourceId: source.id, plan: { name: "v2" }, etag: first.etag })).trackingPlan!;
    expect(second.etag).not.toBe(first.etag);
    expect(second.mode).toBe(PlanMode.OBSERVE);
    const error = await plans
      .setTrackingPlan({ sourceId: source.id, plan: { name: "v3" }, etag: first.etag })
      .catch((e) => ConnectError.from(e));
    expect((error as ConnectError).code).toBe(Code.Aborted);
    const got = (await plans.getTrackingPlan({ sourceId: source.id })).trackingPlan!;
    expect(got.plan).toEqual({ name: "v2" });
    expect(got.etag).toBe(second.etag);
  });

  test("a plan change applies to calls accepted after it", async ({ server }) => {
    const source = await server.createSource("change");
    const tracking = server.tracking(source.writeKey);
    await tracking.track({ track: { userId: "u1", event: "Order Completed", properties: badOrder } });
    await plans.setTrackingPlan({ sourceId: source.id, plan: checkoutPlan, mode: PlanMode.BLOCK });
    const error = await tracking.track({ track: { userId: "u1", event: "Order Completed", properties: badOrder } }).catch((e) => e);
    expect(ConnectError.from(error).code).toBe(Code.InvalidArgument);
    await plans.setTrackingPlan({ sourceId: source.id, plan: checkoutPlan, mode: PlanMode.OFF });
    await tracking.track({ track: { userId: "u1", event: "Order Completed", properties: badOrder } });
    expect((await storedBodies(server, source.id)).length).toBe(2);
  });

  test("plans of unknown sources are not found; admin token required", async ({ server }) => {
    const missing = await plans.getTrackingPlan({ sourceId: "00000000-0000-4000-8000-000000000000" }).catch((e) => ConnectError.from(e));
    expect((missing as ConnectError).code).toBe(Code.NotFound);
    const response = await fetch(`${server.url}/waypost.v1.TrackingPlanService/GetTrackingPlan`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(response.status).toBe(401);
  });
});

test("another process applies a plan change once it reads the plan's revision again (at most a second later)", async ({ server }) => {
  const clock = new ManualClock();
  const other = await startTestServer({ database: server.database, clock, config: { role: "api" } });
  try {
    const source = await server.createSource("two-processes");
    const tracking = other.tracking(source.writeKey);
    const bad = { track: { userId: "u1", event: "Order Completed", properties: badOrder } };
    await tracking.track(bad); // the other process now knows the source has no plan
    await plans.setTrackingPlan({ sourceId: source.id, plan: checkoutPlan, mode: PlanMode.BLOCK });
    // Within the interval, it still goes by what it read.
    await tracking.track(bad);
    clock.advance(1_000);
    const error = await tracking.track(bad).catch((e) => ConnectError.from(e));
    expect((error as ConnectError).rawMessage).toContain("violates the tracking plan");
    // The process that served SetTrackingPlan applied it at once.
    const here = await server
      .tracking(source.writeKey)
      .track(bad)
      .catch((e) => ConnectError.from(e));
    expect((here as ConnectError).code).toBe(Code.InvalidArgument);
  } finally {
    await other.stopService();
  }
});
