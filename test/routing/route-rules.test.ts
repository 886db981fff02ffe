import { expect, test } from "vitest";
import { compileRouteRules, heldBackBy, holdsBack, storedSubscriptions } from "../../src/routing/route-rules.js";
import { segmentEventOf } from "../../src/catalog/segment-event.js";

const receivedAt = new Date("2026-01-02T03:04:05.000Z");
const order = {
  version: 1,
  type: "track",
  event: "Order Completed",
  userId: "u1",
  properties: { total: 150 },
  context: { consent: { categoryPreferences: { Analytics: true, Advertising: false } } },
};
const eventOf = (body: Record<string, unknown>) => () => segmentEventOf(body, { receivedAt });

test("the checks run in order: filter, then consent, then subscriptions; the first that fails names the reason", () => {
  const rules = (filter: Record<string, unknown> | null, categories: string[], subscribe: string | undefined) =>
    compileRouteRules({
      filter,
      consentCategories: categories,
      requireConsent: false,
      subscriptions: subscribe === undefined ? undefined : [{ name: "s", subscribe, enabled: true }],
    });
  const everything = rules({ type: "identify" }, ["Advertising"], 'type = "identify"');
  expect(heldBackBy(everything, order, eventOf(order))).toBe("filter");
  expect(heldBackBy(rules({ type: "track" }, ["Advertising"], 'type = "identify"'), order, eventOf(order))).toBe("consent");
  expect(heldBackBy(rules({ type: "track" }, ["Analytics"], 'type = "identify"'), order, eventOf(order))).toBe("subscriptions");
  expect(heldBackBy(rules({ type: "track" }, ["Analytics"], 'event = "Order Completed"'), order, eventOf(order))).toBeUndefined();
  expect(heldBackBy(rules(null, [], undefined), order, eventOf(order))).toBeUndefined();
  expect(holdsBack(rules(null, [], undefined))).toBe(false);
});

test("the Segment-shaped event is built only when subscriptions are checked", () => {
  let built = 0;
  const counting = () => {
    built++;
    return segmentEventOf(order, { receivedAt });
  };
  const consentOnly = compileRouteRules({
    filter: null,
    consentCategories: ["Advertising"],
    requireConsent: false,
    subscriptions: undefined,
  });
  expect(heldBackBy(consentOnly, order, counting)).toBe("consent");
  expect(built).toBe(0);
  const subscribed = compileRouteRules({
    filter: null,
    consentCategories: [],
    requireConsent: false,
    subscriptions: [{ name: "s", subscribe: 'type = "track"', enabled: true }],
  });
  expect(heldBackBy(subscribed, order, counting)).toBeUndefined();
  expect(built).toBe(1);
});

test("subscriptions: disabled ones and ones that do not parse match nothing; none at all holds every call back", () => {
  const withSubscriptions = (list: Array<{ subscribe: string; enabled: boolean }>) =>
    compileRouteRules({
      filter: null,
      consentCategories: [],
      requireConsent: false,
      subscriptions: list.map((s, i) => ({ name: `s${i}`, ...s })),
    });
  expect(heldBackBy(withSubscriptions([{ subscribe: 'type = "track"', enabled: false }]), order, eventOf(order))).toBe("subscriptions");
  expect(heldBackBy(withSubscriptions([{ subscribe: "(((", enabled: true }]), order, eventOf(order))).toBe("subscriptions");
  expect(heldBackBy(withSubscriptions([]), order, eventOf(order))).toBe("subscriptions");
  // Matched on the Segment-shaped event: receivedAt is the delivery's, an alias's ids renamed.
  const alias = { version: 1, type: "alias", "Previous ID": "old", "User ID": "new" };
  const aliasRules = withSubscriptions([{ subscribe: 'type = "alias" and previousId = "old"', enabled: true }]);
  expect(heldBackBy(aliasRules, alias, eventOf(alias))).toBeUndefined();
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
