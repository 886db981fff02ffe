import http from "node:http";
import https from "node:https";
import { createRequire } from "node:module";
import type { Duplex } from "node:stream";
import tls from "node:tls";
import { afterAll, beforeAll, expect, test } from "vitest";
import { DestinationKind } from "../../../../gen/waypost/v1/destination_pb.js";
import { batchPlanOf } from "../../../../src/delivery/kinds/integration/runner.js";
import { loadEntry } from "../../../../src/catalog/catalog-entry.js";
import { presetSubscriptions } from "../../../../src/catalog/catalog.js";
import type { IntegrationSubscriptionSettings } from "../../../../src/catalog/integration-settings.js";
import { segmentEventOf } from "../../../../src/catalog/segment-event.js";
import { startTestServer, type TestServer } from "../../../helpers/server.js";
import { startVendorStandIn, type VendorRequest, type VendorStandIn } from "../../../helpers/vendor-stand-in.js";

// Conformance: for the same calls, settings and subscriptions, the requests
// Waypost sends (its loop, its own HTTP client through a proxy) are those the
// catalog's own runtime builds and sends when run directly on the same input
// (its Destination class, node-fetch, Node's https). Both reach one vendor
// stand-in through its CONNECT proxy; method, URL, body and headers are
// compared, but for the user agent and the hop-by-hop ones.
const require = createRequire(import.meta.url);
const core = require("@segment/actions-core") as {
  Destination: new (
    definition: unknown,
  ) => {
    onEvent(event: unknown, settings: Record<string, unknown>): Promise<unknown>;
    onBatch(events: unknown[], settings: Record<string, unknown>): Promise<unknown>;
    actions: Record<string, { definition: { fields?: Record<string, unknown>; performBatch?: unknown } }>;
  };
  defaultValues(fields: Record<string, unknown>): Record<string, unknown>;
};

let vendor: VendorStandIn;
let server: TestServer;
let originalAgent: https.Agent;

beforeAll(async () => {
  vendor = await startVendorStandIn();
  server = await startTestServer({
    config: { outbound: { httpsProxy: vendor.proxyUrl }, delivery: { integrationFlushMs: 20 } },
    ca: vendor.caPem,
  });
  // The catalog's own runtime sends with node-fetch over Node's https.globalAgent: here, through the same proxy.
  originalAgent = https.globalAgent;
  https.globalAgent = tunnelAgent(vendor.proxyUrl, vendor.caPem);
}, 60_000);
afterAll(async () => {
  if (originalAgent) https.globalAgent = originalAgent;
  await server?.stop();
  await vendor?.close();
});

/** An https.Agent whose every connection is a CONNECT tunnel through `proxyUrl`, trusting `ca`. */
function tunnelAgent(proxyUrl: string, ca: string): https.Agent {
  const proxy = new URL(proxyUrl);
  class TunnelAgent extends https.Agent {
    override createConnection(
      options: tls.ConnectionOptions & { host?: string; port?: number },
      done: (error: Error | null, socket?: Duplex) => void,
    ) {
      const connect = http.request({
        host: proxy.hostname,
        port: Number(proxy.port),
        method: "CONNECT",
        path: `${options.host}:${options.port ?? 443}`,
      });
      connect.once("connect", (response, socket) => {
        if (response.statusCode !== 200) return done(new Error(`proxy answered ${response.statusCode}`));
        const secure = tls.connect({ socket, servername: options.servername || options.host, ca });
        secure.once("secureConnect", () => done(null, secure));
        secure.once("error", (error) => done(error));
      });
      connect.once("error", (error) => done(error));
      connect.end();
      return undefined as never;
    }
  }
  return new TunnelAgent({ keepAlive: false });
}

interface Case {
  slug: string;
  settings: Record<string, unknown>;
  /** Absent: the entry's automatic presets. */
  subscriptions?: IntegrationSubscriptionSettings[];
}

const calls: Array<{ kind: "track" | "identify" | "page" | "group" | "screen" | "alias"; body: Record<string, unknown> }> = [
  {
    kind: "track",
    body: {
      userId: "user-1",
      anonymousId: "anon-1",
      event: "Order Completed",
      properties: {
        order_id: "o-1",
        total: 42.5,
        revenue: 42.5,
        currency: "USD",
        products: [{ product_id: "p-1", price: 42.5, quantity: 1, name: "Mug" }],
      },
      context: { ip: "203.0.113.7", userAgent: "Mozilla/5.0", page: { url: "https://shop.example/checkout", title: "Checkout" } },
    },
  },
  { kind: "identify", body: { userId: "user-1", anonymousId: "anon-1", traits: { email: "ada@example.com", name: "Ada", plan: "pro" } } },
  {
    kind: "page",
    body: {
      userId: "user-1",
      anonymousId: "anon-1",
      name: "Pricing",
      properties: { url: "https://shop.example/pricing", title: "Pricing" },
    },
  },
];

const sub = (name: string, subscribe: string, action: string, mapping: Record<string, unknown> = {}): IntegrationSubscriptionSettings => ({
  name,
  subscribe,
  action,
  mapping,
  enabled: true,
});

const cases: Case[] = [
  { slug: "mixpanel", settings: { projectToken: "mp-token-5f2c9a", apiSecret: "mp-secret-8d1e4b" } },
  { slug: "amplitude", settings: { apiKey: "amp-key-4c7e21", secretKey: "amp-secret-9a3f66" } },
  { slug: "posthog", settings: { api_key: "phc_key_6b1d0e", project_id: "4242", endpoint: "https://us.i.posthog.com" } },
  { slug: "customerio", settings: { siteId: "cio-site-2e8f", apiKey: "cio-key-7a90c3" } },
  { slug: "braze", settings: { api_key: "braze-key-31d7aa", endpoint: "https://rest.iad-01.braze.com" } },
  {
    slug: "slack",
    settings: {},
    subscriptions: [
      sub("Orders", 'event = "Order Completed"', "postToChannel", {
        url: "https://hooks.slack.com/services/T000/B000/XXXX",
        text: { "@template": "{{userId}} ordered {{properties.total}}" },
      }),
    ],
  },
  {
    slug: "klaviyo",
    settings: { api_key: "pk_klaviyo_key_55aa" },
    subscriptions: [sub("Track Calls", 'type = "track"', "trackEvent"), sub("Identify Calls", 'type = "identify"', "upsertProfile")],
  },
  { slug: "iterable", settings: { apiKey: "iterable-key-0c4d1e" } },
  {
    slug: "google-analytics-4",
    settings: { measurementId: "G-TEST12345", apiSecret: "ga4-secret-71be0f" },
    subscriptions: [sub("Purchases", 'event = "Order Completed"', "purchase"), sub("Pages", 'type = "page"', "pageView")],
  },
  {
    slug: "webhook",
    settings: { sharedSecret: "webhook-secret-9911" },
    subscriptions: [sub("All", 'type = "track" or type = "identify"', "send", { url: "https://hooks.vendor.test/in" })],
  },
  { slug: "june", settings: { apiKey: "june-key-4e5f6a" } },
  { slug: "launchpad", settings: { apiSecret: "launchpad-secret-3b9e" } },
];

/** What the comparison keeps of a request. */
function comparable(request: VendorRequest) {
  const headers = { ...request.headers };
  for (const name of ["user-agent", "connection", "keep-alive", "x-request-id"]) delete headers[name];
  return { method: request.method, url: request.url, headers, body: canonical(request.body) };
}

/**
 * A JSON body with its object keys sorted: the stored call's text and the
 * body the loop hands the kind may order an object's keys differently (a
 * Struct over RPC has no order), which no JSON reader sees.
 */
function canonical(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), (_key, value: unknown) =>
      value && typeof value === "object" && !Array.isArray(value)
        ? Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : value,
    );
  } catch {
    return body;
  }
}

const sorted = (requests: VendorRequest[]) => requests.map(comparable).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

async function waypostRequests(caseOf: Case, sourceId: string, writeKey: string, destinationId: string) {
  const tracking = server.tracking(writeKey);
  const results: Array<{ event: unknown; requests: VendorRequest[] }> = [];
  void caseOf;
  for (const call of calls) {
    const before = vendor.requests.length;
    const sent = await (tracking as unknown as Record<string, (r: unknown) => Promise<{ messageId: string }>>)[call.kind]!({
      [call.kind]: call.body,
    });
    const finished = async () =>
      (
        await server.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM deliveries d JOIN messages m ON m.id = d.message_pk
          WHERE d.destination_id = $1 AND m.message_id = $2 AND d.status IN ('delivered', 'failed', 'retrying')`,
          [destinationId, sent.messageId],
        )
      ).rows[0]!.n;
    const routed = (
      await server.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE d.destination_id = $1 AND m.message_id = $2",
        [destinationId, sent.messageId],
      )
    ).rows[0]!.n;
    if (routed > 0) while ((await finished()) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const stored = (
      await server.pool.query<{ payload: string; received_at: Date; sent_at: Date | null }>(
        "SELECT payload, received_at, sent_at FROM messages WHERE source_id = $1 AND message_id = $2",
        [sourceId, sent.messageId],
      )
    ).rows[0]!;
    const event = segmentEventOf(JSON.parse(stored.payload) as Record<string, unknown>, {
      receivedAt: stored.received_at,
      sentAt: stored.sent_at,
    });
    results.push({ event, requests: vendor.requests.slice(before) });
  }
  return results;
}

async function catalogRequests(
  caseOf: Case,
  stored: { settings: Record<string, unknown>; subscriptions: IntegrationSubscriptionSettings[] },
  event: unknown,
): Promise<VendorRequest[]> {
  const definition = loadEntry(caseOf.slug)!;
  const { settings, subscriptions } = stored;
  const destination = new core.Destination(definition);
  const before = vendor.requests.length;
  for (const s of subscriptions) {
    const action = destination.actions[s.action];
    // As Segment stores a mapping: the action's field defaults, then the subscription's own values.
    const mapping = { ...core.defaultValues(action?.definition.fields ?? {}), ...s.mapping };
    const subscription = { subscribe: s.subscribe, partnerAction: s.action, mapping };
    try {
      if (batchPlanOf(action as never, mapping)) await destination.onBatch([event], { ...settings, subscription });
      else await destination.onEvent(event, { ...settings, subscriptions: [subscription] });
    } catch {
      // An action refusing the call: Waypost's side fails the same way (compared by the requests made).
    }
  }
  return vendor.requests.slice(before);
}

for (const caseOf of cases) {
  test(`${caseOf.slug}: Waypost sends what the catalog's runtime builds; secrets masked in attempts`, async () => {
    const subscriptions = caseOf.subscriptions ?? presetSubscriptions(loadEntry(caseOf.slug)!);
    expect(subscriptions.length).toBeGreaterThan(0);
    const source = await server.createSource();
    const destination = await server.createDestination({
      name: caseOf.slug,
      sourceIds: [source.id],
      kind: DestinationKind.INTEGRATION,
      integration: { slug: caseOf.slug, settings: caseOf.settings as never, subscriptions: subscriptions as never },
    });
    // The settings and subscriptions as stored (the entry's setting defaults filled in, as Segment stores them).
    const stored = (
      await server.pool.query<{ integration: { settings: Record<string, unknown>; subscriptions: IntegrationSubscriptionSettings[] } }>(
        "SELECT integration FROM destinations WHERE id = $1",
        [destination.id],
      )
    ).rows[0]!.integration;
    const sent = await waypostRequests(caseOf, source.id, source.writeKey, destination.id);
    let total = 0;
    for (const { event, requests } of sent) {
      const reference = await catalogRequests(caseOf, stored, event);
      expect(sorted(requests)).toEqual(sorted(reference));
      total += requests.length;
    }
    expect(total).toBeGreaterThan(0);
    // Secrets appear in no attempt (URL, error, response) nor delivery shown over RPC.
    const { deliveries } = await server.deliveries.listDeliveries({ destinationId: destination.id });
    const secrets = Object.values(caseOf.settings).filter(
      (v): v is string => typeof v === "string" && /secret|key|token|pk_|phc_|wk/.test(v),
    );
    for (const d of deliveries) {
      const { delivery } = await server.deliveries.getDelivery({ id: d.id });
      const shown = JSON.stringify(delivery!.attempts, (_key, value: unknown) => (typeof value === "bigint" ? String(value) : value));
      for (const secret of secrets) expect(shown).not.toContain(secret);
    }
  }, 30_000);
}
