import { expect, test } from "vitest";
import { type CallMatcher, compileRouteRules, heldBackBy, holdsBack, routedCall } from "../../src/routing/route-rules.js";

const receivedAt = new Date("2026-01-02T03:04:05.000Z");
const order = {
  version: 1,
  type: "track",
  event: "Order Completed",
  userId: "u1",
  properties: { total: 150 },
  context: { consent: { categoryPreferences: { Analytics: true, Advertising: false } } },
};
const call = (body: unknown) => routedCall(body, receivedAt);
/** A kind's matcher taking the calls of one type. */
const ofType =
  (type: string): CallMatcher =>
  (c) =>
    (c.body as { type?: string }).type === type;

test("the checks run in order: filter, then consent, then the kind's matcher; the first that fails names the reason", () => {
  const rules = (filter: Record<string, unknown> | null, categories: string[], matcher: CallMatcher | undefined) =>
    compileRouteRules({ filter, consentCategories: categories, requireConsent: false, matcher });
  const everything = rules({ type: "identify" }, ["Advertising"], ofType("identify"));
  expect(heldBackBy(everything, call(order))).toBe("filter");
  expect(heldBackBy(rules({ type: "track" }, ["Advertising"], ofType("identify")), call(order))).toBe("consent");
  expect(heldBackBy(rules({ type: "track" }, ["Analytics"], ofType("identify")), call(order))).toBe("subscriptions");
  expect(heldBackBy(rules({ type: "track" }, ["Analytics"], ofType("track")), call(order))).toBeUndefined();
  expect(heldBackBy(rules(null, [], undefined), call(order))).toBeUndefined();
  expect(holdsBack(rules(null, [], undefined))).toBe(false);
  expect(holdsBack(rules(null, [], ofType("track")))).toBe(true);
});

test("a view of the call is made once, however many matchers ask, and only when one runs", () => {
  let made = 0;
  const view = (c: { body: unknown }) => {
    made++;
    return (c.body as { event?: string }).event;
  };
  const ordersOnly: CallMatcher = (c) => c.view(view) === "Order Completed";
  const consentOnly = compileRouteRules({ filter: null, consentCategories: ["Advertising"], requireConsent: false, matcher: ordersOnly });
  const subscribed = compileRouteRules({ filter: null, consentCategories: [], requireConsent: false, matcher: ordersOnly });
  const routed = call(order);
  // Consent holds it back before the matcher runs: no view is made.
  expect(heldBackBy(consentOnly, routed)).toBe("consent");
  expect(made).toBe(0);
  expect(heldBackBy(subscribed, routed)).toBeUndefined();
  expect(heldBackBy(subscribed, routed)).toBeUndefined();
  expect(made).toBe(1);
  // Another call has views of its own.
  expect(heldBackBy(subscribed, call({ ...order, event: "Other" }))).toBe("subscriptions");
  expect(made).toBe(2);
});
