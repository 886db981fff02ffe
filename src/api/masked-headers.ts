import type { StoredWebhook } from "./destination-validation.js";
import { invalidArgument } from "./errors.js";
import { isSecretHeader, maskHeaders, maskedValue } from "./request-headers.js";

/**
 * Webhooks as the API returns them: header values that carry credentials
 * (Authorization, names with token, key, secret...: the rule the delivery
 * views mask by) read "[masked]". Static headers are write-only, like the
 * shared secret: whoever can read a destination cannot borrow its
 * credentials.
 */
export function maskWebhooks(webhooks: readonly StoredWebhook[]): StoredWebhook[] {
  return webhooks.map((webhook) => ({ url: webhook.url, headers: maskHeaders(webhook.headers) }));
}

/**
 * Puts the stored value back wherever an update sends a credential header
 * still reading "[masked]", so that a form or a CLI that edits what Get
 * returned keeps the credentials it never saw. The stored value comes from
 * the current webhook with the same URL, else the one at the same position
 * (the URL itself was edited); the header name matches case-insensitively.
 * A masked value with nothing stored to keep (a new header, a create) is
 * refused: sending "[masked]" as a credential is never what was meant.
 */
export function keepMaskedValues(field: string, incoming: StoredWebhook[], current: readonly StoredWebhook[]): StoredWebhook[] {
  return incoming.map((webhook, i) => {
    const source = current.find((c) => c.url === webhook.url) ?? current[i];
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(webhook.headers)) {
      if (value !== maskedValue || !isSecretHeader(name)) {
        headers[name] = value;
        continue;
      }
      const stored = source && Object.entries(source.headers).find(([n]) => n.toLowerCase() === name.toLowerCase());
      if (!stored) {
        throw invalidArgument(
          `${field}[${i}].headers.${name}`,
          `is "${maskedValue}" but there is no stored value to keep: send the real value`,
        );
      }
      headers[name] = stored[1];
    }
    return { url: webhook.url, headers };
  });
}
