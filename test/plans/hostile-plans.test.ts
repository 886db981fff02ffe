import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { describe, expect } from "vitest";
import { PlanMode, TrackingPlanService } from "../../gen/waypost/v1/tracking_plan_pb.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { adminTransport } from "./support.js";

const test = testWith();
let plans: Client<typeof TrackingPlanService>;

test.beforeAll(async ({ server }) => {
  plans = createClient(TrackingPlanService, adminTransport(server));
});

async function compat(server: TestServer, writeKey: string, path: string, body: unknown) {
  const response = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

async function refusal(sourceId: string, properties: unknown): Promise<ConnectError> {
  const error = await plans
    .setTrackingPlan({ sourceId, plan: { events: { E: { properties } } } as never })
    .then(() => undefined)
    .catch((e) => ConnectError.from(e));
  expect(error, "the plan was accepted").toBeInstanceOf(ConnectError);
  return error as ConnectError;
}

describe("a backtracking pattern", () => {
  test("one 31-byte value is answered at once in block mode, over /v1/track and the Track RPC", async ({ server }) => {
    const source = await server.createSource("redos");
    const plan = { events: { Signup: { properties: { type: "object", properties: { name: { type: "string", pattern: "^(a+)+$" } } } } } };
    await plans.setTrackingPlan({ sourceId: source.id, plan, mode: PlanMode.BLOCK });
    const hostile = `${"a".repeat(30)}!`;
    expect(Buffer.byteLength(hostile)).toBe(31);

    // A backtracking engine tries about 2^30 ways here: tens of seconds with the event loop frozen.
    const started = performance.now();
    const single = await compat(server, source.writeKey, "/v1/track", { userId: "u1", event: "Signup", properties: { name: hostile } });
    expect(single.status).toBe(400);
    expect(String(single.json.message)).toContain('violates the tracking plan: properties.name: must match pattern "^(a+)+$"');
    const rpc = await server
      .tracking(source.writeKey)
      .track({ track: { userId: "u1", event: "Signup", properties: { name: hostile } } })
      .catch((e) => ConnectError.from(e));
    expect((rpc as ConnectError).code).toBe(Code.InvalidArgument);
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    // A bound for a stall, not a speed check: both calls and /readyz take milliseconds.
    expect(performance.now() - started).toBeLessThan(5000);

    const ok = await compat(server, source.writeKey, "/v1/track", { userId: "u1", event: "Signup", properties: { name: "aaa" } });
    expect(ok).toEqual({ status: 200, json: { success: true } });
  });

  test("a pattern the linear engine cannot run is invalid_argument naming the path and keyword", async ({ server }) => {
    const source = await server.createSource("lookahead");
    const error = await refusal(source.id, { type: "object", properties: { code: { type: "string", pattern: "^(?=x)x+$" } } });
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("plan.events.E.properties.properties.code.pattern");
    expect(error.rawMessage).toContain("cannot be matched in linear time");
  });
});

test("a call over the per-call size limit is refused before it is checked against the plan", async ({ server }) => {
  const source = await server.createSource("oversized");
  const items = { type: "array", items: { type: "string", pattern: "^[a-z]+$" } };
  await plans.setTrackingPlan({
    sourceId: source.id,
    plan: { events: { Tagged: { properties: { type: "object", properties: { tags: items } } } } },
    mode: PlanMode.OBSERVE,
  });
  // 20,000 values the pattern refuses, about 100 KB: refused for its size, with no schema work and no violation.
  const big = await compat(server, source.writeKey, "/v1/track", {
    userId: "u1",
    event: "Tagged",
    properties: { tags: Array(20_000).fill("1234") },
  });
  expect(big.status).toBe(400);
  expect(String(big.json.message)).toContain("over the limit of 32768 bytes (32 KB) per call");
  expect((await plans.listViolations({ sourceId: source.id })).violations).toEqual([]);
  // The plan is in force for calls within the limit.
  expect((await compat(server, source.writeKey, "/v1/track", { userId: "u1", event: "Tagged", properties: { tags: ["1"] } })).status).toBe(
    200,
  );
  expect((await plans.listViolations({ sourceId: source.id })).violations.map((v) => v.path)).toEqual(["properties.tags[0]"]);
});

describe("plans that cannot be evaluated", () => {
  test('{"$ref":"#"} is refused at save with invalid_argument, and calls of that event stay accepted', async ({ server }) => {
    const source = await server.createSource("self-ref");
    const error = await refusal(source.id, { $ref: "#" });
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("plan.events.E.properties.$ref");
    expect(error.rawMessage).toContain("$ref loop");
    expect((await plans.getTrackingPlan({ sourceId: source.id })).trackingPlan?.etag).toBe("");
    expect((await compat(server, source.writeKey, "/v1/track", { userId: "u1", event: "E" })).status).toBe(200);
  });

  test.for([PlanMode.OBSERVE, PlanMode.OMIT, PlanMode.BLOCK])(
    "a self-referencing plan stored before this check (mode %s) never turns a call into a 500",
    async (mode, { server }) => {
      const source = await server.createSource(`stored-self-ref-${mode}`);
      const modeName = { [PlanMode.OBSERVE]: "observe", [PlanMode.OMIT]: "omit", [PlanMode.BLOCK]: "block" }[mode as 2 | 3 | 4];
      await server.pool.query("INSERT INTO tracking_plans (source_id, plan, mode) VALUES ($1, $2, $3)", [
        source.id,
        JSON.stringify({ events: { E: { properties: { $ref: "#" } } } }),
        modeName,
      ]);
      const answer = await compat(server, source.writeKey, "/v1/track", { userId: "u1", event: "E", properties: { a: 1 } });
      expect(answer.status).toBeLessThan(500);
      const rpc = await server.tracking(source.writeKey).track({ track: { userId: "u1", event: "E", properties: { a: 1 } } });
      expect(rpc).toBeDefined();
    },
  );
});

describe("JSON Schema dialects through SetTrackingPlan", () => {
  test("draft-07 is accepted and enforced", async ({ server }) => {
    const source = await server.createSource("draft-07");
    const properties = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      definitions: { money: { type: "number", minimum: 0 } },
      properties: { total: { $ref: "#/definitions/money" } },
      required: ["total"],
    };
    await plans.setTrackingPlan({ sourceId: source.id, plan: { events: { Paid: { properties } } }, mode: PlanMode.BLOCK });
    expect((await compat(server, source.writeKey, "/v1/track", { userId: "u1", event: "Paid", properties: { total: 3 } })).status).toBe(
      200,
    );
    const bad = await compat(server, source.writeKey, "/v1/track", { userId: "u1", event: "Paid", properties: { total: -1 } });
    expect(bad.status).toBe(400);
    expect(String(bad.json.message)).toContain("properties.total: must be >= 0");
  });

  test("draft-04 is invalid_argument naming $schema, never internal", async ({ server }) => {
    const source = await server.createSource("draft-04");
    const error = await refusal(source.id, { $schema: "http://json-schema.org/draft-04/schema#", type: "object" });
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("plan.events.E.properties.$schema");
  });

  test("a Snowplow Iglu schema is invalid_argument naming self", async ({ server }) => {
    const source = await server.createSource("iglu");
    const error = await refusal(source.id, {
      $schema: "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#",
      self: { vendor: "com.acme", name: "paid", format: "jsonschema", version: "1-0-0" },
      type: "object",
    });
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("plan.events.E.properties.self");
    expect(error.rawMessage).toContain("Snowplow Iglu");
  });
});

describe("the plan as applied", () => {
  const text =
    '{\n    "name": "Zebra first",\n    "events": {\n        "Zed": {"properties": {"type": "object", "properties": {"z": {"type": "number"}, "a": {"type": "string"}}}},\n        "Alpha": {}\n    },\n    "allowUnplannedEvents": true\n}';

  test("planJson is kept and returned byte for byte; plan follows the same key order", async ({ server }) => {
    const source = await server.createSource("exact-text");
    const set = await plans.setTrackingPlan({ sourceId: source.id, planJson: text, mode: PlanMode.OBSERVE });
    expect(set.trackingPlan?.planJson).toBe(text);
    const got = (await plans.getTrackingPlan({ sourceId: source.id })).trackingPlan!;
    expect(got.planJson).toBe(text);
    expect(Object.keys(got.plan!)).toEqual(["name", "events", "allowUnplannedEvents"]);
    expect(Object.keys(got.plan!.events as object)).toEqual(["Zed", "Alpha"]);
    const tracked = await compat(server, source.writeKey, "/v1/track", { userId: "u1", event: "Zed", properties: { z: "no" } });
    expect(tracked.status).toBe(200);
  });

  test("planJson that is not JSON, or given with plan, is invalid_argument", async ({ server }) => {
    const source = await server.createSource("bad-text");
    const notJson = await plans.setTrackingPlan({ sourceId: source.id, planJson: "{" }).catch((e) => ConnectError.from(e));
    expect((notJson as ConnectError).code).toBe(Code.InvalidArgument);
    expect((notJson as ConnectError).rawMessage).toContain("planJson: is not JSON");
    const both = await plans.setTrackingPlan({ sourceId: source.id, planJson: "{}", plan: {} }).catch((e) => ConnectError.from(e));
    expect((both as ConnectError).rawMessage).toContain("planJson: give plan or planJson, not both");
  });

  test("a U+0000 anywhere in a plan is invalid_argument naming where, not internal", async ({ server }) => {
    const source = await server.createSource("nul-plan");
    const inStruct = await plans.setTrackingPlan({ sourceId: source.id, plan: { name: "a\u0000b" } }).catch((e) => ConnectError.from(e));
    expect((inStruct as ConnectError).code).toBe(Code.InvalidArgument);
    expect((inStruct as ConnectError).rawMessage).toContain("plan.name: must not contain NUL characters");
    const inText = await plans
      .setTrackingPlan({ sourceId: source.id, planJson: '{"events": {"E": {"properties": {"enum": ["x\\u0000"]}}}}' })
      .catch((e) => ConnectError.from(e));
    expect((inText as ConnectError).code).toBe(Code.InvalidArgument);
    expect((inText as ConnectError).rawMessage).toContain("plan.events.E.properties.enum[0]: contains the character U+0000");
  });

  test("a plan given as a Struct is returned as JSON text in the order given", async ({ server }) => {
    const source = await server.createSource("struct-text");
    await plans.setTrackingPlan({ sourceId: source.id, plan: { name: "n", events: { B: {}, A: {} } } });
    const got = (await plans.getTrackingPlan({ sourceId: source.id })).trackingPlan!;
    expect(got.planJson).toBe(`${JSON.stringify({ name: "n", events: { B: {}, A: {} } }, null, 2)}\n`);
  });
});
