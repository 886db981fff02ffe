import type { JsonObject } from "@bufbuild/protobuf";

/** The name a call's integrations object uses for every webhook destination. */
export const webhooksIntegrationName = "Webhooks";

/**
 * Whether a call goes to a destination (SPEC section 3). The most specific
 * key present decides: the destination's own name, then "Webhooks", then
 * "All"; with none of them, it is delivered. Keys are case sensitive. An
 * options object counts as "on", as the common SDKs treat it.
 */
export function isRoutedTo(integrations: JsonObject | undefined, destinationName: string): boolean {
  if (!integrations) return true;
  for (const key of [destinationName, webhooksIntegrationName, "All"]) {
    if (Object.hasOwn(integrations, key)) return integrations[key] !== false;
  }
  return true;
}
