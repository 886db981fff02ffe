import { isIP } from "node:net";
import { InvalidInputError } from "../../../errors.js";
import type { IntegrationDestinationSettings } from "../../../catalog/integration-settings.js";
import type { AddressGuard } from "../../../outbound/address-guard.js";
import { refuseLiteralHost } from "../broker-address.js";

// An integration's requests go where its settings and mappings say: a
// catalog entry's endpoint setting (`https://api.altertable.ai`), a host
// name setting (`events.launchdarkly.com`), a mapping's `url` (the Webhook
// and Slack entries). One naming a loopback, private or link-local host
// literally can only fail at delivery, where the address guard refuses every
// connection; it is refused when saved instead, as a webhook URL is. Host
// names are still judged at delivery, on the addresses they resolve to.

// A value that is a URL as a whole (a template around a literal host too: `http://10.0.0.5/{{userId}}`).
const urlLike = /^https?:\/\//i;
// A value that is a host alone, as some entries take their endpoint: an IP, [IPv6], or localhost, with an optional port.
const hostLike = /^(\[[0-9a-f:.]+\]|[0-9a-f:.]+|localhost)(:\d{1,5})?$/i;

/**
 * Throws an InvalidInputError naming the setting or mapping value that points
 * at a literal host the guard refuses (`destination.integration.subscriptions[0].mapping.url`).
 */
export function refusePrivateHosts(field: string, settings: IntegrationDestinationSettings, guard: AddressGuard): void {
  for (const [key, value] of Object.entries(settings.settings)) {
    if (typeof value === "string" && hostLike.test(value.trim())) refuseHost(`${field}.settings.${key}`, hostOf(value.trim()), guard);
    else refuseInJson(`${field}.settings.${key}`, value, guard);
  }
  settings.subscriptions.forEach((subscription, i) => {
    refuseInJson(`${field}.subscriptions[${i}].mapping`, subscription.mapping, guard);
  });
}

/** Every URL string in a JSON value (directives included), iteratively; the settings' size limits bound it. */
function refuseInJson(field: string, root: unknown, guard: AddressGuard): void {
  const stack: Array<[unknown, string]> = [[root, field]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === "string") {
      const host = urlHost(value.trim());
      if (host !== undefined) refuseHost(path, host, guard);
    } else if (Array.isArray(value)) {
      value.forEach((child, i) => {
        stack.push([child, `${path}[${i}]`]);
      });
    } else if (value !== null && typeof value === "object") {
      for (const [key, child] of Object.entries(value)) stack.push([child, `${path}.${key}`]);
    }
  }
}

function refuseHost(path: string, hostname: string, guard: AddressGuard): void {
  const refused = refuseLiteralHost(hostname, guard);
  if (refused) throw new InvalidInputError(path, refused);
}

/** The host of a value that is an http(s) URL, or undefined (not a URL, or a template in the host itself). */
function urlHost(text: string): string | undefined {
  if (!urlLike.test(text)) return undefined;
  try {
    return new URL(text).hostname || undefined;
  } catch {
    return undefined;
  }
}

/** `10.0.0.5:8080` → `10.0.0.5`; `[::1]:80` → `[::1]`; a bare IPv6 stays whole. */
function hostOf(value: string): string {
  if (value.startsWith("[")) return value.slice(0, value.indexOf("]") + 1);
  if (isIP(value) !== 0) return value;
  return value.replace(/:\d{1,5}$/, "");
}
