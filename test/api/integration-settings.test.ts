import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { type Destination, DestinationKind, type IntegrationSettingsSchema } from "../../gen/waypost/v1/destination_pb.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

const test = testWith({ server: { config: { role: "api" } } });
let sourceId = "";

test.beforeAll(async ({ server }) => {
  sourceId = (await server.createSource()).id;
});

type IntegrationInit = MessageInitShape<typeof IntegrationSettingsSchema>;
const shown = (value: unknown) => JSON.stringify(value, (_, v) => (typeof v === "bigint" ? String(v) : v));

function create(server: TestServer, integration: IntegrationInit, name = "vendor") {
  return server.destinations.createDestination({
    destination: { name, sourceIds: [sourceId], kind: DestinationKind.INTEGRATION, integration },
  });
}

async function refusal(server: TestServer, integration: IntegrationInit): Promise<string> {
  const error = await create(server, integration).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ConnectError);
  expect((error as ConnectError).code).toBe(Code.InvalidArgument);
  return (error as ConnectError).rawMessage;
}

async function stored(server: TestServer, id: string): Promise<any> {
  const { rows } = await server.pool.query("SELECT integration FROM destinations WHERE id = $1", [id]);
  return rows[0].integration;
}

const mixpanelSecret = "mixpanel-secret-abc123";

test("mixpanel without subscriptions gets its automatic presets; the secret is stored, masked in every answer, kept when sent back masked", async ({
  server,
}) => {
  const { destination: created } = await create(server, {
    slug: "mixpanel",
    settings: { projectToken: "tok-1", apiSecret: mixpanelSecret },
  });
  expect(shown(created)).not.toContain(mixpanelSecret);
  expect(created?.integration?.settings).toEqual({ projectToken: "tok-1", apiSecret: "***", apiRegion: "US 🇺🇸", strictMode: "1" });
  expect(created?.integration?.secretSettings).toEqual(["apiSecret"]);
  const names = created!.integration!.subscriptions.map((s) => s.name);
  expect(names).toContain("Track Calls");
  const track = created!.integration!.subscriptions.find((s) => s.name === "Track Calls")!;
  expect(track).toMatchObject({ action: "trackEvent", enabled: true });
  expect(track.mapping?.event).toEqual({ "@path": "$.event" });
  expect((await stored(server, created!.id)).settings.apiSecret).toBe(mixpanelSecret);

  const { destination: got } = await server.destinations.getDestination({ id: created!.id });
  expect(shown(got)).not.toContain(mixpanelSecret);
  const { destinations: listed } = await server.destinations.listDestinations({});
  expect(shown(listed)).not.toContain(mixpanelSecret);

  // Sent back as shown, with one subscription turned off and the region changed: the secret stays.
  const integration = got!.integration!;
  const { destination: updated } = await server.destinations.updateDestination({
    destination: {
      ...(got as Destination),
      integration: {
        ...integration,
        settings: { ...integration.settings, apiRegion: "EU 🇪🇺" },
        subscriptions: integration.subscriptions.map((s) => (s.name === "Track Calls" ? { ...s, enabled: false } : s)),
      },
    },
    updateMask: { paths: ["integration"] },
  });
  expect(shown(updated)).not.toContain(mixpanelSecret);
  const row = await stored(server, created!.id);
  expect(row.settings).toEqual({ projectToken: "tok-1", apiSecret: mixpanelSecret, apiRegion: "EU 🇪🇺", strictMode: "1" });
  expect(row.subscriptions.find((s: any) => s.name === "Track Calls").enabled).toBe(false);

  // A new secret replaces it; subscriptions left out keep the stored ones.
  await server.destinations.updateDestination({
    destination: { id: created!.id, integration: { slug: "mixpanel", settings: { projectToken: "tok-1", apiSecret: "rotated-secret" } } },
    updateMask: { paths: ["integration"] },
  });
  const rotated = await stored(server, created!.id);
  expect(rotated.settings.apiSecret).toBe("rotated-secret");
  expect(rotated.subscriptions).toEqual(row.subscriptions);
});

test("slack (no settings) with a subscription posting to a webhook URL; the catalog's webhook entry with its shared secret", async ({
  server,
}) => {
  const { destination: slack } = await create(server, {
    slug: "slack",
    subscriptions: [
      {
        name: "Orders to #sales",
        subscribe: 'type = "track" and event = "Order Completed"',
        action: "postToChannel",
        mapping: { url: "https://hooks.slack.com/services/T000/B000/XXXX", text: { "@template": "Order by {{userId}}" } },
      },
    ],
  });
  expect(slack?.integration?.secretSettings).toEqual([]);
  expect(slack?.integration?.subscriptions).toEqual([
    expect.objectContaining({ name: "Orders to #sales", action: "postToChannel", enabled: true }),
  ]);
  const { destination: webhook } = await create(server, {
    slug: "webhook",
    settings: { sharedSecret: "webhook-hmac-secret" },
    subscriptions: [
      { name: "All", subscribe: 'type = "track"', action: "send", mapping: { url: "https://example.com/in", method: "POST" } },
    ],
  });
  expect(shown(webhook)).not.toContain("webhook-hmac-secret");
  expect(webhook?.integration?.settings).toEqual({ sharedSecret: "***" });
  expect((await stored(server, webhook!.id)).settings.sharedSecret).toBe("webhook-hmac-secret");
});

test("every refusal names its path", async ({ server }) => {
  const mixpanel = (
    more: { settings?: IntegrationInit["settings"]; subscriptions?: IntegrationInit["subscriptions"] } = {},
  ): IntegrationInit => ({
    slug: "mixpanel",
    settings: more.settings ?? { projectToken: "t", apiSecret: "s" },
    subscriptions: more.subscriptions ?? [],
  });
  const track = { name: "Track", subscribe: 'type = "track"', action: "trackEvent" };
  expect(await refusal(server, { slug: "" })).toMatch(/^destination\.integration\.slug: required/);
  expect(await refusal(server, { slug: "no-such-vendor" })).toBe(
    'destination.integration.slug: no catalog entry "no-such-vendor" (IntegrationService/ListIntegrations lists them)',
  );
  expect(await refusal(server, { slug: "kafka" })).toMatch(
    /^destination\.integration\.slug: the catalog entry "kafka" is not offered: it opens its own connections/,
  );
  expect(await refusal(server, { slug: "mixpanel", settings: { projectToken: "t" } })).toBe(
    "destination.integration.settings.apiSecret: required",
  );
  expect(await refusal(server, mixpanel({ settings: { projectToken: "t", apiSecret: "s", apiKey: "x" } }))).toMatch(
    /^destination\.integration\.settings\.apiKey: the entry "mixpanel" has no setting "apiKey" \(it has: projectToken, apiSecret/,
  );
  expect(await refusal(server, mixpanel({ settings: { projectToken: "t", apiSecret: "s", apiRegion: "Mars" } }))).toBe(
    'destination.integration.settings.apiRegion: must be one of "US 🇺🇸", "EU 🇪🇺", "IN 🇮🇳", got "Mars"',
  );
  expect(await refusal(server, mixpanel({ settings: { projectToken: 7, apiSecret: "s" } }))).toBe(
    "destination.integration.settings.projectToken: must be a string, got 7",
  );
  // "***" on a create has nothing to keep.
  expect(await refusal(server, mixpanel({ settings: { projectToken: "t", apiSecret: "***" } }))).toMatch(
    /^destination\.integration\.settings\.apiSecret: is "\*\*\*" but there is no stored value to keep/,
  );
  expect(await refusal(server, { slug: "slack" })).toMatch(
    /^destination\.integration\.subscriptions: required: the entry "slack" has no automatic presets/,
  );
  expect(await refusal(server, mixpanel({ subscriptions: [track, { ...track, subscribe: 'type = "identify"' }] }))).toBe(
    'destination.integration.subscriptions[1].name: "Track" is the name of another subscription',
  );
  expect(await refusal(server, mixpanel({ subscriptions: [{ ...track, name: " " }] }))).toBe(
    "destination.integration.subscriptions[0].name: required",
  );
  expect(await refusal(server, mixpanel({ subscriptions: [track, { ...track, name: "Bad", subscribe: 'event = "a" and type' }] }))).toBe(
    "destination.integration.subscriptions[1].subscribe: Value token is missing",
  );
  expect(await refusal(server, mixpanel({ subscriptions: [{ ...track, subscribe: "" }] }))).toBe(
    "destination.integration.subscriptions[0].subscribe: must not be empty",
  );
  expect(await refusal(server, mixpanel({ subscriptions: [{ ...track, action: "sendSms" }] }))).toMatch(
    /^destination\.integration\.subscriptions\[0\]\.action: the entry "mixpanel" has no action "sendSms" \(it has: .*trackEvent/,
  );
  expect(await refusal(server, mixpanel({ subscriptions: [{ ...track, mapping: { event: { "@path": "$.event" }, foo: 1 } }] }))).toBe(
    'destination.integration.subscriptions[0].mapping.foo: the action "trackEvent" has no field "foo"',
  );
  // A directive the catalog's runtime cannot read, refused when saved rather than at every delivery.
  expect(await refusal(server, mixpanel({ subscriptions: [{ ...track, mapping: { event: { "@path": 5 } } }] }))).toBe(
    "destination.integration.subscriptions[0].mapping.event: /event/@path should be a string or a mapping directive but it is a number",
  );
  expect(await refusal(server, mixpanel({ subscriptions: [{ ...track, mapping: { event: { "@nope": "$.event" } } }] }))).toBe(
    "destination.integration.subscriptions[0].mapping.event: /event has an invalid directive: @nope",
  );
  // The integration field on another kind, and another kind's field on an integration.
  const wrongKind = await server.destinations
    .createDestination({
      destination: {
        name: "x",
        sourceIds: [sourceId],
        kind: DestinationKind.INTEGRATION,
        integration: mixpanel(),
        webhooks: [{ url: "https://example.com" }],
      },
    })
    .catch((e: ConnectError) => e.rawMessage);
  expect(wrongKind).toMatch(/^destination\.webhooks: a catalog integration destination has no/);
});

test("enable_batching turns on an action's batch form, even one that does not declare it as a field; it is refused elsewhere", async ({
  server,
}) => {
  const send = { name: "All", subscribe: 'type = "track"', action: "send" };
  const { destination } = await create(server, {
    slug: "webhook",
    subscriptions: [{ ...send, mapping: { url: "https://example.com/in", enable_batching: true, batch_size: 500 } }],
  });
  expect((await stored(server, destination!.id)).subscriptions[0]?.mapping).toMatchObject({ enable_batching: true, batch_size: 500 });
  expect(
    await refusal(server, {
      slug: "webhook",
      subscriptions: [{ ...send, mapping: { url: "https://example.com/in", enable_batching: "yes" } }],
    }),
  ).toBe("destination.integration.subscriptions[0].mapping.enable_batching: must be true or false");
  // Slack's postToChannel has no batch form.
  expect(
    await refusal(server, {
      slug: "slack",
      subscriptions: [{ name: "S", subscribe: 'type = "track"', action: "postToChannel", mapping: { enable_batching: true } }],
    }),
  ).toBe('destination.integration.subscriptions[0].mapping.enable_batching: the action "postToChannel" has no field "enable_batching"');
});

test("switching entries does not carry the old entry's secrets over", async ({ server }) => {
  const { destination } = await create(server, {
    slug: "webhook",
    settings: { sharedSecret: "first-secret" },
    subscriptions: [{ name: "All", subscribe: 'type = "track"', action: "send", mapping: { url: "https://example.com/a" } }],
  });
  const error = await server.destinations
    .updateDestination({
      destination: { id: destination!.id, integration: { slug: "mixpanel", settings: { projectToken: "t", apiSecret: "***" } } },
      updateMask: { paths: ["integration"] },
    })
    .catch((e: ConnectError) => e);
  expect((error as ConnectError).rawMessage).toMatch(
    /^destination\.integration\.settings\.apiSecret: is "\*\*\*" but there is no stored value/,
  );
  expect((await stored(server, destination!.id)).slug).toBe("webhook");
});

test("numbers and booleans may come as text (as the CLI's --setting sends them) and are stored typed", async ({ server }) => {
  const { destination: vwo } = await create(server, { slug: "vwo", settings: { vwoAccountId: "654321" } });
  expect(vwo?.integration?.settings?.vwoAccountId).toBe(654321);
  expect(await refusal(server, { slug: "vwo", settings: { vwoAccountId: "many" } })).toBe(
    'destination.integration.settings.vwoAccountId: must be a number, got "many"',
  );
  const { destination: posthog } = await create(server, {
    slug: "posthog",
    settings: { api_key: "phc_key", project_id: "1", endpoint: "https://us.i.posthog.com", geoip_disable: "true" },
  });
  expect(posthog?.integration?.settings?.geoip_disable).toBe(true);
  expect(
    await refusal(server, {
      slug: "posthog",
      settings: { api_key: "k", project_id: "1", endpoint: "https://eu.i.posthog.com", geoip_disable: "maybe" },
    }),
  ).toBe('destination.integration.settings.geoip_disable: must be true or false, got "maybe"');
});
