import { InvalidInputError } from "../../../errors.js";
import type { AddressGuard } from "../../../outbound/address-guard.js";
import { maskedSecret, parseBrokerUrl, refuseLiteralHost } from "../broker-address.js";
import { parseTemplate, type Template } from "../templates.js";

/** A NATS JetStream destination's settings as stored. The token and password are never shown. */
export interface NatsSettings {
  /** 1 to 5 `nats://host:port` or `tls://host:port` URLs of one cluster. */
  servers: string[];
  /** A template: `{type}`, `{event}`, `{sourceId}`, `{destinationId}`. */
  subject: string;
  /** "" when none. */
  token: string;
  user: string;
  password: string;
}

/** What a create or update sends; empty and absent fields take their defaults. */
export interface NatsSettingsInput {
  servers: readonly string[];
  subject?: string | undefined;
  token?: string | undefined;
  user?: string | undefined;
  password?: string | undefined;
}

/** The settings as a response shows them: credentials `***` when set. */
export interface NatsSettingsView {
  servers: string[];
  subject: string;
  user: string;
  token: string;
  password: string;
  hasToken: boolean;
  hasPassword: boolean;
}

export const natsLimits = {
  maxServers: 5,
  maxUrlLength: 2048,
  maxSubjectLength: 255,
  maxCredentialLength: 1024,
} as const;

export const natsDefaults = { subject: "waypost.{type}" } as const;

/**
 * Reads and checks a NATS destination's settings (field: the settings'
 * path, e.g. `destination.nats`). On an update, a token or password sent
 * back as `***` keeps the stored one (`stored`).
 */
export function validateNatsSettings(
  field: string,
  input: NatsSettingsInput,
  guard: AddressGuard,
  stored?: NatsSettings | undefined,
): NatsSettings {
  const servers = validateServers(`${field}.servers`, input.servers, guard);
  const subject = input.subject || natsDefaults.subject;
  natsSubjectTemplate(`${field}.subject`, subject);
  const token = keepStoredSecret(`${field}.token`, input.token ?? "", stored?.token);
  const user = credential(`${field}.user`, input.user ?? "");
  const password = keepStoredSecret(`${field}.password`, input.password ?? "", stored?.password);
  if (password !== "" && user === "") throw new InvalidInputError(`${field}.password`, "is set without a user");
  if (token !== "" && user !== "") throw new InvalidInputError(`${field}.token`, "and a user are both set: use one or the other");
  return { servers, subject, token, user, password };
}

/** The subject template, parsed (InvalidInputError naming the field when it is not one). */
export function natsSubjectTemplate(field: string, subject: string): Template {
  // NATS subjects end at whitespace: a space would split the PUB line.
  return parseTemplate(field, subject, { maxLength: natsLimits.maxSubjectLength, forbidden: /[\s\p{Cc}]/u });
}

function validateServers(field: string, servers: readonly string[], guard: AddressGuard): string[] {
  if (servers.length === 0) throw new InvalidInputError(field, "at least one server is required");
  if (servers.length > natsLimits.maxServers) {
    throw new InvalidInputError(field, `at most ${natsLimits.maxServers} servers are allowed, got ${servers.length}`);
  }
  const checked = servers.map((raw, i) => validateServer(`${field}[${i}]`, raw, guard));
  if (new Set(checked.map((url) => url.protocol)).size > 1) {
    throw new InvalidInputError(field, "mixes nats:// and tls://: the servers of one cluster all use TLS or none does");
  }
  return checked.map((url) => url.href);
}

function validateServer(field: string, raw: string, guard: AddressGuard): URL {
  const url = parseBrokerUrl(field, raw, {
    schemes: ["nats", "tls"],
    maxLength: natsLimits.maxUrlLength,
    notUrl: `${JSON.stringify(raw.slice(0, 100))} is not a URL (nats://host:4222 or tls://host:4222)`,
  });
  if (url.username !== "" || url.password !== "") {
    throw new InvalidInputError(field, "must not contain a user name or password: use the token, user and password fields");
  }
  if ((url.pathname !== "" && url.pathname !== "/") || url.search !== "" || url.hash !== "") {
    throw new InvalidInputError(field, "must be just scheme, host and port");
  }
  const refused = refuseLiteralHost(url.hostname, guard);
  if (refused) throw new InvalidInputError(field, refused);
  return new URL(`${url.protocol}//${url.host}`);
}

function credential(field: string, value: string): string {
  if (value.length > natsLimits.maxCredentialLength) {
    throw new InvalidInputError(field, `is longer than ${natsLimits.maxCredentialLength} characters`);
  }
  if (/[\p{Cc}]/u.test(value)) throw new InvalidInputError(field, "must not contain control characters");
  return value;
}

/**
 * A write-only credential: `***` keeps the stored value; `***` with nothing
 * stored is refused (storing "***" as the secret is never what was meant).
 */
export function keepStoredSecret(field: string, incoming: string, stored: string | undefined): string {
  if (incoming !== maskedSecret) return credential(field, incoming);
  if (stored) return stored;
  throw new InvalidInputError(field, `is "${maskedSecret}" but there is no stored value to keep: send the real value`);
}

/** The settings for a response: the token and password masked. */
export function natsSettingsView(settings: NatsSettings): NatsSettingsView {
  return {
    servers: [...settings.servers],
    subject: settings.subject,
    user: settings.user,
    token: settings.token === "" ? "" : maskedSecret,
    password: settings.password === "" ? "" : maskedSecret,
    hasToken: settings.token !== "",
    hasPassword: settings.password !== "",
  };
}
