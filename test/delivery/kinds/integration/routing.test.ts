import { expect, test } from "vitest";
import type { IntegrationDestinationSettings } from "../../../../src/catalog/integration-settings.js";
import { integrationRouting, storedSubscriptions } from "../../../../src/delivery/kinds/integration/routing.js";
import { matcherOfRow } from "../../../../src/delivery/kinds/registry.js";
import { emptyKindColumns, routingColumns } from "../../../../src/db/queries/destinations.js";
import { compileRouteRules, heldBackBy, routedCall } from "../../../../src/routing/route-rules.js";

// The integration kind's routing: a call is routed to an integration
// destination when one of its enabled subscriptions matches the call's
// Segment-shaped event.
const receivedAt = new Date("2026-01-02T03:04:05.000Z");
const order = { version: 1, type: "track", event: "Order Completed", userId: "u1", properties: { total: 150 } };
const call = (body: unknown) => routedCall(body, receivedAt);

function settings(list: Array<{ subscribe: string; enabled: boolean }>): IntegrationDestinationSettings {
  return {
    slug: "webhook",
    settings: {},
    subscriptions: list.map((s, i) => ({ name: `s${i}`, action: "send", mapping: {}, ...s })),
  };
}
const matches = (list: Array<{ subscribe: string; enabled: boolean }>, body: unknown) =>
  integrationRouting.matcher(settings(list))(call(body));

test("subscriptions: disabled ones and ones that do not parse match nothing; none at all matches no call", () => {
  expect(matches([{ subscribe: 'type = "track"', enabled: true }], order)).toBe(true);
  expect(matches([{ subscribe: 'type = "track"', enabled: false }], order)).toBe(false);
  expect(matches([{ subscribe: "(((", enabled: true }], order)).toBe(false);
  expect(matches([], order)).toBe(false);
  // Matched on the Segment-shaped event: an alias's ids renamed.
  const alias = { version: 1, type: "alias", "Previous ID": "old", "User ID": "new" };
  expect(matches([{ subscribe: 'type = "alias" and previousId = "old"', enabled: true }], alias)).toBe(true);
});

test("held back as 'subscriptions', after the filter and consent", () => {
  const rules = compileRouteRules({
    filter: { type: "track" },
    consentCategories: [],
    requireConsent: false,
    matcher: integrationRouting.matcher(settings([{ subscribe: 'event = "Signed Up"', enabled: true }])),
  });
  expect(heldBackBy(rules, call(order))).toBe("subscriptions");
  expect(heldBackBy(rules, call({ ...order, type: "page" }))).toBe("filter");
  expect(heldBackBy(rules, call({ ...order, event: "Signed Up" }))).toBeUndefined();
});

test("stored subscriptions are read defensively from the integration column", () => {
  expect(storedSubscriptions(null)).toEqual([]);
  expect(storedSubscriptions({ slug: "x" })).toEqual([]);
  expect(
    storedSubscriptions({
      subscriptions: [
        { name: "a", subscribe: 'type = "track"', action: "t", mapping: {}, enabled: true },
        { name: "b", subscribe: 'type = "page"' },
        { name: "c", subscribe: 'type = "page"', enabled: false },
        { name: "d", subscribe: 42 },
        "junk",
      ],
    }),
  ).toEqual([
    { name: "a", subscribe: 'type = "track"', enabled: true },
    { name: "b", subscribe: 'type = "page"', enabled: true },
    { name: "c", subscribe: 'type = "page"', enabled: false },
    { name: "d", subscribe: "", enabled: false },
  ]);
});

test("a stored row: its kind's matcher from its routing column; a kind without routing has none", () => {
  expect(routingColumns).toContain(integrationRouting.column);
  const row = { ...emptyKindColumns, kind: "integration", integration: settings([{ subscribe: 'type = "track"', enabled: true }]) };
  expect(matcherOfRow(row)?.(call(order))).toBe(true);
  expect(matcherOfRow({ ...row, integration: { slug: "webhook", settings: {}, subscriptions: [] } })?.(call(order))).toBe(false);
  expect(matcherOfRow({ ...emptyKindColumns, kind: "webhook" })).toBeUndefined();
});
