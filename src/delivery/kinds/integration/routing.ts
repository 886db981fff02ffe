import type { IntegrationDestinationSettings } from "../../../catalog/integration-settings.js";
import { segmentEventOf } from "../../../catalog/segment-event.js";
import { compileSubscriptions, type SubscriptionCondition } from "../../../catalog/subscriptions.js";
import { isPlainObject } from "../../../routing/filter.js";
import type { RoutedCall } from "../../../routing/route-rules.js";
import type { KindRouting } from "../kind.js";

/**
 * A routed call as the subscriptions see it: its Segment-shaped event, made
 * once per call for every integration destination (RoutedCall.view keys it
 * by this function).
 */
function segmentEventOfCall(call: RoutedCall) {
  return segmentEventOf(isPlainObject(call.body) ? call.body : {}, { receivedAt: call.receivedAt });
}

/**
 * The integration kind's routing: a call that matches none of the
 * destination's enabled subscriptions gets no delivery (reason
 * "subscriptions"). Its settings live in the `integration` column.
 */
export const integrationRouting: KindRouting<IntegrationDestinationSettings> = {
  column: "integration",
  matcher(settings) {
    const compiled = compileSubscriptions(storedSubscriptions(settings));
    return (call) => compiled.matchesAny(call.view(segmentEventOfCall));
  },
};

/**
 * The subscriptions of an integration destination's settings, read
 * defensively (stored ones were checked when written, but a row is only
 * JSON): entries that are not objects are skipped, one without a string
 * `subscribe` is off (it has no condition to match), `enabled` defaults to
 * true.
 */
export function storedSubscriptions(integration: unknown): SubscriptionCondition[] {
  if (!isPlainObject(integration) || !Array.isArray(integration.subscriptions)) return [];
  const list: SubscriptionCondition[] = [];
  for (const entry of integration.subscriptions as unknown[]) {
    if (!isPlainObject(entry)) continue;
    list.push({
      name: typeof entry.name === "string" ? entry.name : "",
      subscribe: typeof entry.subscribe === "string" ? entry.subscribe : "",
      enabled: entry.enabled !== false && typeof entry.subscribe === "string",
    });
  }
  return list;
}
