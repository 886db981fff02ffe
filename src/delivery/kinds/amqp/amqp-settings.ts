import { InvalidInputError } from "../../../errors.js";
import type { AddressGuard } from "../../../outbound/address-guard.js";
import { maskedSecret, maskUrlPassword, parseBrokerUrl, refuseLiteralHost } from "../broker-address.js";
import { parseTemplate, type Template } from "../templates.js";

/** An AMQP destination's settings as stored. The URL holds the password: never shown whole. */
export interface AmqpSettings {
  /** amqp:// or amqps://, with user, password and vhost. */
  url: string;
  /** "" is the default exchange (the routing key names a queue). */
  exchange: string;
  /** A template: `{type}`, `{event}`, `{sourceId}`, `{destinationId}`. */
  routingKey: string;
  /** Unroutable messages come back (basic.return) and fail the attempt. */
  mandatory: boolean;
}

/** What a create or update sends; empty and absent fields take their defaults. */
export interface AmqpSettingsInput {
  url: string;
  exchange?: string | undefined;
  routingKey?: string | undefined;
  mandatory?: boolean | undefined;
}

/** The settings as a response shows them: the password masked, and whether a URL is stored. */
export interface AmqpSettingsView {
  url: string;
  hasAmqpUrl: boolean;
  exchange: string;
  routingKey: string;
  mandatory: boolean;
}

export const amqpLimits = {
  maxUrlLength: 2048,
  // AMQP 0-9-1 short strings: exchange names and routing keys are at most 255 bytes.
  maxExchangeLength: 255,
  maxRoutingKeyLength: 255,
} as const;

export const amqpDefaults = { exchange: "", routingKey: "{type}", mandatory: true } as const;

// RabbitMQ's rule for exchange names.
const exchangePattern = /^[A-Za-z0-9_.:-]*$/;

/**
 * Reads and checks an AMQP destination's settings (field: the settings'
 * path, e.g. `destination.amqp`). On an update, `stored` is what is kept:
 * a URL sent back as a response showed it (password `***`) keeps the stored
 * URL, so a form that edits what Get returned never needs the password.
 */
export function validateAmqpSettings(
  field: string,
  input: AmqpSettingsInput,
  guard: AddressGuard,
  stored?: AmqpSettings | undefined,
): AmqpSettings {
  const url = validateAmqpUrl(`${field}.url`, keepStoredAmqpUrl(`${field}.url`, input.url, stored), guard);
  const exchange = input.exchange ?? amqpDefaults.exchange;
  if (Buffer.byteLength(exchange) > amqpLimits.maxExchangeLength) {
    throw new InvalidInputError(`${field}.exchange`, `is longer than ${amqpLimits.maxExchangeLength} bytes`);
  }
  if (!exchangePattern.test(exchange)) {
    throw new InvalidInputError(`${field}.exchange`, "may hold only letters, digits, hyphen, underscore, period and colon");
  }
  const routingKey = input.routingKey || amqpDefaults.routingKey;
  amqpRoutingKeyTemplate(`${field}.routingKey`, routingKey);
  return { url, exchange, routingKey, mandatory: input.mandatory ?? amqpDefaults.mandatory };
}

/** The routing key template, parsed (InvalidInputError naming the field when it is not one). */
export function amqpRoutingKeyTemplate(field: string, routingKey: string): Template {
  // Whitespace and control characters are legal in AMQP, but never meant in a routing key.
  return parseTemplate(field, routingKey, { maxLength: amqpLimits.maxRoutingKeyLength, forbidden: /[\s\p{Cc}]/u });
}

function validateAmqpUrl(field: string, raw: string, guard: AddressGuard): string {
  const url = parseBrokerUrl(field, raw, {
    schemes: ["amqp", "amqps"],
    maxLength: amqpLimits.maxUrlLength,
    // The raw text may hold a password: never echo it.
    notUrl: "is not an absolute URL (amqp://user:password@host:port/vhost)",
  });
  if (url.hash !== "") throw new InvalidInputError(field, "must not have a #fragment");
  if (/[\r\n\0]/.test(raw)) throw new InvalidInputError(field, "must not contain CR, LF or NUL");
  const refused = refuseLiteralHost(url.hostname, guard);
  if (refused) throw new InvalidInputError(field, refused);
  return raw;
}

/**
 * The URL to validate: the stored one when none or the masked form of it
 * came back. A `***` password with nothing stored to keep (a create, or the
 * host or user changed) is refused: storing "***" as the password is
 * never what was meant.
 */
export function keepStoredAmqpUrl(field: string, incoming: string, stored?: AmqpSettings | undefined): string {
  // An update that sends no URL, or the masked one back, keeps the stored URL.
  if (stored && (incoming === "" || incoming === maskUrlPassword(stored.url))) return stored.url;
  if (passwordOf(incoming) === maskedSecret) {
    throw new InvalidInputError(
      field,
      `has the password "${maskedSecret}" but no stored URL with these other parts to keep it from: send the real password`,
    );
  }
  return incoming;
}

function passwordOf(raw: string): string | undefined {
  try {
    return new URL(raw).password;
  } catch {
    return undefined;
  }
}

/** The settings for a response: the URL's password masked. */
export function amqpSettingsView(settings: AmqpSettings): AmqpSettingsView {
  return {
    url: maskUrlPassword(settings.url),
    hasAmqpUrl: settings.url !== "",
    exchange: settings.exchange,
    routingKey: settings.routingKey,
    mandatory: settings.mandatory,
  };
}
