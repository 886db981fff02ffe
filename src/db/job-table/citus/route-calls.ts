import type { JsonObject } from "@bufbuild/protobuf";
import { type HeldBackReason, type MessageToStore, webhooksIntegrationName } from "../store-messages.js";

/** A destination connected to the calls' source, as routing reads it. */
export interface RouteTarget {
  id: string;
  name: string;
  enabled: boolean;
  /** Whether it orders per user (its deliveries then carry a user key). */
  ordered: boolean;
}

/** A call to route, with the key its message was stored under. */
export interface CallToRoute {
  messagePk: string;
  message: MessageToStore;
}

export interface RoutedDelivery {
  destinationId: string;
  messagePk: string;
  orderingKey: string | null;
}

export interface RoutedFate {
  messagePk: string;
  destinationId: string;
  fate: "disabled" | "integrations_off" | "filtered";
  reason: HeldBackReason | null;
}

export interface RoutedCalls {
  /** In the calls' order, so ids drawn in this order are per-user ordering's acceptance order. */
  deliveries: RoutedDelivery[];
  fates: RoutedFate[];
}

/**
 * Whether a call goes to a destination: the JS twin of routingCondition
 * (store-messages.ts), for ingest on Citus, where the messages and their
 * deliveries live on different shards and so are routed in the process.
 * The most specific key present decides: the destination's own name, then
 * "Webhooks", then "All"; none of them: delivered. Any value but false is
 * on. Like jsonb's `->`, only an object has keys: an array or scalar
 * integrations value decides nothing (delivered), as in SQL.
 */
export function routedTo(integrations: JsonObject | null | undefined, destinationName: string): boolean {
  if (integrations === null || integrations === undefined || typeof integrations !== "object" || Array.isArray(integrations)) return true;
  for (const key of [destinationName, webhooksIntegrationName, "All"]) {
    if (Object.hasOwn(integrations, key)) return integrations[key] !== false;
  }
  return true;
}

/** The user key per-user ordering keys a call by (orderingKeySql's rule): the userId, else the anonymousId; none when both are empty. */
export function callOrderingKey(userId: string | undefined, anonymousId: string | undefined): string | null {
  return userId || anonymousId || null;
}

/**
 * Routes stored calls to the source's destinations as the single-node store
 * statement does: a delivery where the destination is enabled, the call's
 * integrations leave it on and its rules did not hold the call back; a fate
 * row saying why otherwise (disabled, then integrations off, then filtered).
 */
export function routeCalls(calls: readonly CallToRoute[], targets: readonly RouteTarget[]): RoutedCalls {
  const deliveries: RoutedDelivery[] = [];
  const fates: RoutedFate[] = [];
  for (const { messagePk, message } of calls) {
    for (const target of targets) {
      const heldBack = message.filteredOut && Object.hasOwn(message.filteredOut, target.id) ? message.filteredOut[target.id]! : undefined;
      const fate = !target.enabled
        ? "disabled"
        : !routedTo(message.integrations, target.name)
          ? "integrations_off"
          : heldBack !== undefined
            ? "filtered"
            : undefined;
      if (fate) {
        fates.push({ messagePk, destinationId: target.id, fate, reason: fate === "filtered" ? heldBack! : null });
      } else {
        const orderingKey = target.ordered ? callOrderingKey(message.userId, message.anonymousId) : null;
        deliveries.push({ destinationId: target.id, messagePk, orderingKey });
      }
    }
  }
  return { deliveries, fates };
}

/** The calls each destination's rules held back, per destination and reason (StoreResult.filtered). */
export function countFiltered(fates: readonly RoutedFate[]): Array<[string, HeldBackReason, number]> {
  const counts = new Map<string, [string, HeldBackReason, number]>();
  for (const fate of fates) {
    if (fate.fate !== "filtered") continue;
    const key = `${fate.destinationId}\u0000${fate.reason}`;
    const entry = counts.get(key);
    if (entry) entry[2]++;
    else counts.set(key, [fate.destinationId, fate.reason!, 1]);
  }
  return [...counts.values()];
}
