import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { IntegrationService } from "../../gen/waypost/v1/integration_pb.js";
import { testWith } from "../helpers/fixtures.js";

const test = testWith({ server: { config: { role: "api" } } });

test("ListIntegrations lists the offered entries by name, matching name and slug case-insensitively", async ({ server }) => {
  const { integrations: all } = await server.integrations.listIntegrations({});
  expect(all.length).toBeGreaterThanOrEqual(150);
  const names = all.map((i) => i.name);
  expect(names).toEqual([...names].sort((a, b) => a.localeCompare(b, "en")));
  expect(all.map((i) => i.slug)).not.toContain("kafka");
  expect(all.map((i) => i.slug)).not.toContain("hubspot");
  const mixpanel = all.find((i) => i.slug === "mixpanel")!;
  expect(mixpanel).toMatchObject({ name: "Mixpanel (Actions)", actionCount: 6, batchActionCount: expect.any(Number) });
  expect(mixpanel.batchActionCount).toBeGreaterThan(0);

  const { integrations: byName } = await server.integrations.listIntegrations({ query: "MIXPANEL" });
  expect(byName.map((i) => i.slug)).toContain("mixpanel");
  for (const i of byName) expect(`${i.name} ${i.slug}`.toLowerCase()).toContain("mixpanel");
  const { integrations: bySlug } = await server.integrations.listIntegrations({ query: "google-analytics-4" });
  expect(bySlug.map((i) => i.slug)).toEqual(["google-analytics-4"]);
  const { integrations: none } = await server.integrations.listIntegrations({ query: "no such vendor at all" });
  expect(none).toEqual([]);
});

test("GetIntegration describes the settings (secrets marked), actions with their fields and batch form, and presets", async ({
  server,
}) => {
  const { integration } = await server.integrations.getIntegration({ slug: "mixpanel" });
  expect(integration?.name).toBe("Mixpanel (Actions)");
  const settings = Object.fromEntries(integration!.settings.map((s) => [s.key, s]));
  expect(settings.apiSecret).toMatchObject({ label: "Secret Key", type: "password", required: true, secret: true });
  expect(settings.projectToken).toMatchObject({ type: "string", required: true, secret: false });
  expect(settings.apiRegion?.choices).toEqual(["US 🇺🇸", "EU 🇪🇺", "IN 🇮🇳"]);
  expect(settings.apiRegion?.default?.kind).toEqual({ case: "stringValue", value: "US 🇺🇸" });
  const track = integration!.actions.find((a) => a.slug === "trackEvent")!;
  expect(track).toMatchObject({ title: "Track Event", hasBatch: true, defaultSubscription: expect.stringContaining("track") });
  const event = track.fields.find((f) => f.key === "event")!;
  expect(event.required).toBe(true);
  // An action field's default is a mapping directive.
  expect(event.default?.kind.case).toBe("structValue");
  const preset = integration!.presets.find((p) => p.name === "Track Calls")!;
  expect(preset).toMatchObject({ action: "trackEvent", subscribe: expect.stringContaining('type = "track"') });
  expect(preset.mapping?.event).toEqual({ "@path": "$.event" });
});

test("an unknown or not offered slug is NOT_FOUND naming it; the admin token is required", async ({ server }) => {
  for (const slug of ["no-such-vendor", "kafka", "../index", ""]) {
    const error = await server.integrations.getIntegration({ slug }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.NotFound);
    expect((error as ConnectError).rawMessage).toBe(`integration ${JSON.stringify(slug)} not found`);
  }
  const anonymous = createClient(IntegrationService, server.transport);
  const error = await anonymous.listIntegrations({}).catch((e: unknown) => e);
  expect((error as ConnectError).code).toBe(Code.Unauthenticated);
});
