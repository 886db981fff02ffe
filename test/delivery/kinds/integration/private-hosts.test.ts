import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect } from "vitest";
import { DestinationKind, type IntegrationSettingsSchema } from "../../../../gen/waypost/v1/destination_pb.js";
import { testWith } from "../../../helpers/fixtures.js";
import { startTestServer, type TestServer } from "../../../helpers/server.js";

// With private destinations off, an integration whose settings or mappings
// name a loopback, private or link-local host literally is refused when
// saved, as a webhook URL is, rather than saved to fail at every delivery.

type IntegrationInit = MessageInitShape<typeof IntegrationSettingsSchema>;

let sourceId = "";

const test = testWith({ server: { config: { delivery: { allowPrivateDestinations: false } } } });
test.beforeAll(async ({ server: strict }) => {
  sourceId = (await strict.createSource()).id;
});

const create = (server: TestServer, integration: IntegrationInit) =>
  server.destinations.createDestination({
    destination: { name: "vendor", sourceIds: [sourceId], kind: DestinationKind.INTEGRATION, integration },
  });

async function refusal(server: TestServer, integration: IntegrationInit): Promise<string> {
  const error = await create(server, integration).then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  expect(error?.code).toBe(Code.InvalidArgument);
  return error!.rawMessage;
}

const webhookTo = (url: unknown): IntegrationInit => ({
  slug: "webhook",
  subscriptions: [{ name: "All", subscribe: 'type = "track"', action: "send", mapping: { url: url as string, method: "POST" } }],
});
const altertableAt = (endpoint: string): IntegrationInit => ({
  slug: "altertable",
  settings: { apiKey: "key", environment: "production", endpoint },
});
const launchDarklyAt = (host: string): IntegrationInit => ({
  slug: "launchdarkly",
  settings: { client_id: "client", events_host_name: host },
});

describe("with private destinations off", () => {
  test.for([
    "http://127.0.0.1:8080/in",
    "http://localhost:9000/",
    "http://[::1]/",
    "http://10.0.0.5/hook",
    "http://169.254.169.254/latest/meta-data/",
    "https://[fd00:ec2::254]/",
    "http://127.0.0.1/{{userId}}",
  ])("a mapping's url %s is refused, naming the field and the setting that allows it", async (url, { server: strict }) => {
    const message = await refusal(strict, webhookTo(url));
    expect(message).toMatch(/^destination\.integration\.subscriptions\[0\]\.mapping\.url: /);
    expect(message).toContain("WAYPOST_ALLOW_PRIVATE_DESTINATIONS");
  });

  test("a literal host inside a mapping directive is refused", async ({ server: strict }) => {
    const message = await refusal(
      strict,
      webhookTo(JSON.parse('{"@if":{"exists":{"@path":"$.x"},"then":"http://192.168.1.1/a","else":"https://example.com/"}}')),
    );
    expect(message).toMatch(/^destination\.integration\.subscriptions\[0\]\.mapping\.url\.@if\.then: /);
  });

  test("an endpoint setting that is a private URL, or a private host alone, is refused", async ({ server: strict }) => {
    expect(await refusal(strict, altertableAt("http://127.0.0.1:4318"))).toMatch(
      /^destination\.integration\.settings\.endpoint: .*WAYPOST_ALLOW_PRIVATE_DESTINATIONS/,
    );
    expect(await refusal(strict, launchDarklyAt("127.0.0.1:8080"))).toMatch(/^destination\.integration\.settings\.events_host_name: /);
    expect(await refusal(strict, launchDarklyAt("localhost"))).toMatch(/^destination\.integration\.settings\.events_host_name: /);
  });

  test("public URLs and host names are saved (names are judged at delivery, on what they resolve to)", async ({ server: strict }) => {
    expect((await create(strict, webhookTo("https://hooks.example.com/in"))).destination?.id).toBeTruthy();
    expect((await create(strict, webhookTo("http://93.184.216.34/in"))).destination?.id).toBeTruthy();
    expect((await create(strict, webhookTo("https://{{properties.host}}/in"))).destination?.id).toBeTruthy();
    expect((await create(strict, altertableAt("https://api.altertable.ai"))).destination?.id).toBeTruthy();
    expect((await create(strict, launchDarklyAt("events.launchdarkly.com"))).destination?.id).toBeTruthy();
  });

  test("an update to a private URL is refused and the stored mapping stays", async ({ server: strict }) => {
    const id = (await create(strict, webhookTo("https://hooks.example.com/in"))).destination!.id;
    const error = await strict.destinations
      .updateDestination({ destination: { id, integration: webhookTo("http://10.1.1.1/") }, updateMask: { paths: ["integration"] } })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(error?.rawMessage).toContain("destination.integration.subscriptions[0].mapping.url");
    const { rows } = await strict.pool.query("SELECT integration FROM destinations WHERE id = $1", [id]);
    expect(rows[0].integration.subscriptions[0].mapping.url).toBe("https://hooks.example.com/in");
  });
});

test("where private destinations are allowed (or the range is), loopback URLs are saved", async ({ server: strict }) => {
  const lenient = await startTestServer({ database: strict.database });
  const ranged = await startTestServer({
    database: strict.database,
    config: { delivery: { allowPrivateDestinations: false, allowedCidrs: ["127.0.0.0/8"] } },
  });
  try {
    expect((await create(lenient, webhookTo("http://10.0.0.5/in"))).destination?.id).toBeTruthy();
    expect((await create(ranged, webhookTo("http://127.0.0.1:9/in"))).destination?.id).toBeTruthy();
    expect((await create(ranged, launchDarklyAt("localhost:9"))).destination?.id).toBeTruthy();
    expect(await refusal(ranged, webhookTo("http://10.0.0.5/in"))).toContain("WAYPOST_ALLOW_PRIVATE_DESTINATIONS");
  } finally {
    await lenient.stopService();
    await ranged.stopService();
  }
});
