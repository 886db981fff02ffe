import { type DescField, type DescMessage, type DescService, fromJson, ScalarType } from "@bufbuild/protobuf";
import { type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect } from "vitest";
import { AudienceKind, AudienceService } from "../../gen/waypost/v1/audience_pb.js";
import { DeletionService } from "../../gen/waypost/v1/deletion_pb.js";
import { DeliveryService } from "../../gen/waypost/v1/delivery_pb.js";
import { DestinationService } from "../../gen/waypost/v1/destination_pb.js";
import { HookService } from "../../gen/waypost/v1/hook_pb.js";
import { IntegrationService } from "../../gen/waypost/v1/integration_pb.js";
import { SourceService } from "../../gen/waypost/v1/source_pb.js";
import { TrackingPlanService } from "../../gen/waypost/v1/tracking_plan_pb.js";
import { audienceClient, createAudience, storedMembers, streamOf } from "../audiences/support.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

// Every string an admin RPC takes, found from the services' own schemas (so a
// field added later is covered too), is sent holding a NUL: each must be a
// 400 naming that field, never a 500 from Postgres.

const adminServices: DescService[] = [
  SourceService,
  DestinationService,
  IntegrationService,
  DeliveryService,
  HookService,
  AudienceService,
  DeletionService,
  TrackingPlanService,
];

const nul = "a\u0000b";

/** A request body holding `text` at one place, and the path the refusal must name. */
interface Probe {
  body: unknown;
  path: string;
  /** The refusal names a key rather than a value. */
  key?: boolean;
}

/** One probe per string leaf reachable in `desc` (repeated fields through their first element). */
function probes(desc: DescMessage, text: string, prefix = "", seen: readonly string[] = []): Probe[] {
  if (seen.includes(desc.typeName) || seen.length > 6) return [];
  return desc.fields.flatMap((field) =>
    fieldProbes(field, text, prefix === "" ? field.jsonName : `${prefix}.${field.jsonName}`, [...seen, desc.typeName]),
  );
}

function fieldProbes(field: DescField, text: string, path: string, seen: readonly string[]): Probe[] {
  const wrap = (inner: Probe[]) => inner.map((p) => ({ ...p, body: { [field.jsonName]: p.body } }));
  switch (field.fieldKind) {
    case "scalar":
      return field.scalar === ScalarType.STRING ? wrap([{ body: text, path }]) : [];
    case "message":
      return wrap(messageProbes(field.message, text, path, seen));
    case "list":
      if (field.listKind === "scalar") return field.scalar === ScalarType.STRING ? wrap([{ body: [text], path: `${path}[0]` }]) : [];
      if (field.listKind === "message")
        return wrap(messageProbes(field.message, text, `${path}[0]`, seen).map((p) => ({ ...p, body: [p.body] })));
      return [];
    case "map": {
      const keyed: Probe = { body: { [text]: field.mapKind === "message" ? {} : "" }, path, key: true };
      if (field.mapKind === "scalar")
        return field.scalar === ScalarType.STRING ? wrap([keyed, { body: { k: text }, path: `${path}["k"]` }]) : [];
      if (field.mapKind === "message") {
        return wrap([keyed, ...messageProbes(field.message, text, `${path}["k"]`, seen).map((p) => ({ ...p, body: { k: p.body } }))]);
      }
      return [];
    }
    default:
      return [];
  }
}

function messageProbes(desc: DescMessage, text: string, path: string, seen: readonly string[]): Probe[] {
  if (desc.typeName === "google.protobuf.Struct") {
    return [
      { body: { k: text }, path: `${path}.k` },
      { body: { k: { deeper: [1, text] } }, path: `${path}.k.deeper[1]` },
      { body: { [text]: 1 }, path, key: true },
    ];
  }
  if (desc.typeName === "google.protobuf.Value") return [{ body: text, path }];
  if (desc.typeName === "google.protobuf.ListValue") return [{ body: [text], path: `${path}[0]` }];
  if (desc.typeName === "google.protobuf.StringValue") return [{ body: text, path }];
  if (desc.typeName.startsWith("google.protobuf.")) return []; // timestamps, durations, field masks: parsed, not stored as text
  return probes(desc, text, path, seen);
}

const unaryMethods = adminServices.flatMap((service) =>
  service.methods
    .filter((m) => m.methodKind === "unary")
    .map((method) => ({ route: `${service.typeName}/${method.name}`, input: method.input })),
);

const test = testWith({ server: { config: { delivery: { allowPrivateDestinations: false } } } });
let sourceId = "";

test.beforeAll(async ({ server }) => {
  sourceId = (await server.createSource()).id;
});

async function adminJson(server: TestServer, route: string, body: unknown) {
  const response = await fetch(`${server.url}/${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${server.adminToken}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as { code?: string; message?: string } };
}

describe("every string of every admin RPC", () => {
  const cases = unaryMethods.flatMap(({ route, input }) => probes(input, nul).map((probe) => ({ route, ...probe })));

  test("the schemas reach the fields this test is about", () => {
    const paths = cases.map((c) => `${c.route.split("/")[1]} ${c.path}`);
    expect(paths).toContain("CreateSource source.webhook.response.body");
    expect(paths).toContain("CreateDestination destination.integration.subscriptions[0].subscribe");
    expect(paths).toContain("UpdateDestination destination.integration.subscriptions[0].mapping.k");
    expect(paths).toContain("CreateDestination destination.integration.settings.k");
    expect(cases.length).toBeGreaterThan(150);
  });

  test("NUL in any of them is 400 invalid_argument naming the field", async ({ server }) => {
    const wrong: string[] = [];
    for (const probe of cases) {
      const answer = await adminJson(server, probe.route, probe.body);
      const expected = probe.key
        ? `${probe.path}: the key ${JSON.stringify(nul)} must not contain NUL characters`
        : `${probe.path}: must not contain NUL characters`;
      if (answer.status !== 400 || answer.json.code !== "invalid_argument" || answer.json.message !== expected) {
        wrong.push(`${probe.route} ${probe.path}: ${answer.status} ${answer.json.message}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  test("a lone surrogate in JSON-typed fields (settings, mappings, filters, trait values) is 400 naming the field", async ({ server }) => {
    const surrogate = "a\ud800b";
    const jsonCases = unaryMethods.flatMap(({ route, input }) =>
      probes(input, surrogate)
        .filter((probe) => !probe.key)
        .map((probe) => ({ route, ...probe })),
    );
    const inJson = jsonCases.filter((c) => /\.(settings|mapping|filter|values)\b/.test(c.path));
    expect(inJson.length).toBeGreaterThan(5);
    const wrong: string[] = [];
    for (const probe of inJson) {
      const answer = await adminJson(server, probe.route, probe.body);
      if (answer.status !== 400 || answer.json.message !== `${probe.path}: must not contain unpaired UTF-16 surrogates`) {
        wrong.push(`${probe.route} ${probe.path}: ${answer.status} ${answer.json.message}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe("complete requests with unstorable text where a 500 was", () => {
  const webhookSource = (response: object) => ({ source: { name: "hooks", kind: "SOURCE_KIND_WEBHOOK", webhook: { response } } });
  const integration = (overrides: { subscribe?: string; mapping?: object; settings?: object }) => ({
    destination: {
      name: "vendor",
      sourceIds: [sourceId],
      kind: "DESTINATION_KIND_INTEGRATION",
      integration: {
        slug: "mixpanel",
        settings: { projectToken: "tok", apiSecret: "secret", ...overrides.settings },
        subscriptions: [
          {
            name: "Track Calls",
            subscribe: overrides.subscribe ?? 'type = "track"',
            action: "trackEvent",
            mapping: { event: { "@path": "$.event" }, ...overrides.mapping },
          },
        ],
      },
    },
  });

  test.for<[string, () => unknown, string]>([
    [
      "waypost.v1.SourceService/CreateSource",
      () => webhookSource({ body: nul }),
      "source.webhook.response.body: must not contain NUL characters",
    ],
    [
      "waypost.v1.DestinationService/CreateDestination",
      () => integration({ subscribe: `type = "track" and event = "${nul}"` }),
      "destination.integration.subscriptions[0].subscribe: must not contain NUL characters",
    ],
    [
      "waypost.v1.DestinationService/CreateDestination",
      () => integration({ mapping: { event: nul } }),
      "destination.integration.subscriptions[0].mapping.event: must not contain NUL characters",
    ],
    [
      "waypost.v1.DestinationService/CreateDestination",
      () => integration({ mapping: { event: "a\ud800" } }),
      "destination.integration.subscriptions[0].mapping.event: must not contain unpaired UTF-16 surrogates",
    ],
    [
      "waypost.v1.DestinationService/CreateDestination",
      () => integration({ settings: { projectToken: nul } }),
      "destination.integration.settings.projectToken: must not contain NUL characters",
    ],
  ])("%s: %s", async ([route, body, message], { server }) => {
    const answer = await adminJson(server, route, body());
    expect(answer.json.message).toBe(message);
    expect(answer.status).toBe(400);
  });

  test("an update holding NUL is refused and the stored settings stay as they were", async ({ server }) => {
    const created = await adminJson(server, "waypost.v1.SourceService/CreateSource", webhookSource({ body: "ok" }));
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const id = (created.json as { source?: { id: string } }).source!.id;
    const answer = await adminJson(server, "waypost.v1.SourceService/UpdateSource", {
      source: { id, webhook: { response: { body: nul } } },
      updateMask: "webhook.response",
    });
    expect(answer.status).toBe(400);
    const { rows } = await server.pool.query("SELECT webhook FROM sources WHERE id = $1", [id]);
    expect(rows[0].webhook.response.body).toBe("ok");
  });
});

test("a streamed sync is checked message by message, the refusal saying which, and nothing is applied", async ({ server }) => {
  const trait = await createAudience(server, sourceId, "Plan", AudienceKind.COMPUTED_TRAIT);
  const value = (json: unknown) => fromJson(ValueSchema, json as never);
  const error = await audienceClient(server)
    .streamSyncComputedTrait(
      streamOf<{ audienceId?: string; values: Record<string, Value> }>([
        { audienceId: trait.id, values: { u1: value("pro") } },
        { values: { u2: value({ tier: `x${nul}` }) } },
      ]),
    )
    .catch((e: unknown) => e as { rawMessage?: string });
  expect((error as { rawMessage?: string }).rawMessage).toBe('values["u2"].tier: must not contain NUL characters (stream message 2)');
  expect(await storedMembers(server, trait.id)).toEqual({});
});
