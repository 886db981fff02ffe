import type { JsonObject } from "@bufbuild/protobuf";
import type { IntegrationSettings as IntegrationSettingsProto } from "../../../../gen/waypost/v1/destination_pb.js";
import { InvalidInputError } from "../../../errors.js";
import { loadEntry, mappingProblem, type EntryDefinition } from "../../../catalog/catalog-entry.js";
import {
  actionOf,
  catalogEntries,
  offeredEntry,
  presetSubscriptions,
  type FieldDescription,
  settingFields,
} from "../../../catalog/catalog.js";
import type { IntegrationDestinationSettings, IntegrationSubscriptionSettings } from "../../../catalog/integration-settings.js";
import { subscriptionError } from "../../../catalog/subscriptions.js";
import { maskedSecret } from "../broker-address.js";

export const integrationLimits = {
  maxSubscriptions: 50,
  maxNameLength: 200,
  maxSubscribeLength: 10_000,
  /** Each setting's value, as JSON. */
  maxSettingBytes: 16 * 1024,
  /** Each subscription's mapping, as JSON. */
  maxMappingBytes: 64 * 1024,
} as const;

/**
 * Reads and checks an integration destination's settings (`field`: their
 * path, `destination.integration`) against the catalog entry's own
 * definition. On an update (`stored`), a secret sent back as "***" keeps
 * the stored value, and absent subscriptions keep the stored ones; on a
 * create, absent subscriptions are the entry's automatic presets.
 */
export function validateIntegrationSettings(
  field: string,
  input: IntegrationSettingsProto | undefined,
  stored?: IntegrationDestinationSettings | undefined,
): IntegrationDestinationSettings {
  const slug = input?.slug ?? "";
  const definition = entryOf(`${field}.slug`, slug);
  // Another entry's secrets are not this one's: switching entries starts afresh.
  const kept = stored?.slug === slug ? stored : undefined;
  const settings = validateSettings(`${field}.settings`, slug, definition, input?.settings ?? {}, kept?.settings);
  const given = input?.subscriptions ?? [];
  const subscriptions =
    given.length > 0
      ? validateSubscriptions(`${field}.subscriptions`, slug, definition, given)
      : (kept?.subscriptions ?? presetSubscriptions(definition));
  // A destination that can match nothing is a mistake to point out now, not a silent "filtered" on every call.
  if (subscriptions.length === 0) {
    throw new InvalidInputError(
      `${field}.subscriptions`,
      `required: the entry ${JSON.stringify(slug)} has no automatic presets (IntegrationService/GetIntegration lists its actions)`,
    );
  }
  return { slug, settings, subscriptions };
}

function entryOf(field: string, slug: string): EntryDefinition {
  if (slug === "")
    throw new InvalidInputError(field, "required: the catalog entry to send to (IntegrationService/ListIntegrations lists them)");
  const row = offeredEntry(slug);
  if (!row) {
    const known = catalogEntries().find((entry) => entry.slug === slug);
    if (known) throw new InvalidInputError(field, `the catalog entry ${JSON.stringify(slug)} is not offered: it ${known.reason}`);
    throw new InvalidInputError(
      field,
      `no catalog entry ${JSON.stringify(slug.slice(0, 100))} (IntegrationService/ListIntegrations lists them)`,
    );
  }
  const definition = loadEntry(slug);
  // The index says it loads; a catalog installed without regenerating the index is a bug the index test catches.
  if (!definition) throw new Error(`the catalog entry ${JSON.stringify(slug)} is in the index but does not load`);
  return definition;
}

function validateSettings(
  field: string,
  slug: string,
  definition: EntryDefinition,
  given: JsonObject,
  stored: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const fields = settingFields(definition);
  for (const key of Object.keys(given)) {
    if (!fields.some((f) => f.key === key)) {
      throw new InvalidInputError(
        `${field}.${key}`,
        `the entry ${JSON.stringify(slug)} has no setting ${JSON.stringify(key)}${settingList(fields)}`,
      );
    }
  }
  const settings: Record<string, unknown> = {};
  for (const setting of fields) {
    const path = `${field}.${setting.key}`;
    let value: unknown = given[setting.key];
    if (setting.secret && value === maskedSecret) {
      value = stored?.[setting.key];
      if (value === undefined || value === "") {
        throw new InvalidInputError(path, `is "${maskedSecret}" but there is no stored value to keep: send the real value`);
      }
    }
    if (value === undefined || value === null || value === "") {
      if (setting.default !== undefined && setting.default !== null) settings[setting.key] = setting.default;
      else if (setting.required) throw new InvalidInputError(path, "required");
      continue;
    }
    settings[setting.key] = settingValue(path, setting, value);
  }
  return settings;
}

const settingList = (fields: FieldDescription[]) =>
  fields.length === 0 ? " (it has none)" : ` (it has: ${fields.map((f) => f.key).join(", ")})`;

/** A setting's value in its field's type; numbers and booleans may come as text (as `--setting KEY=VALUE` sends them). */
function settingValue(path: string, setting: FieldDescription, value: unknown): unknown {
  if (JSON.stringify(value).length > integrationLimits.maxSettingBytes) {
    throw new InvalidInputError(path, `is longer than ${integrationLimits.maxSettingBytes} bytes`);
  }
  let typed: unknown;
  switch (setting.type) {
    case "number":
    case "integer": {
      const number = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
      if (typeof number !== "number" || !Number.isFinite(number))
        throw new InvalidInputError(path, `must be a number, got ${describe(value)}`);
      if (setting.type === "integer" && !Number.isInteger(number)) throw new InvalidInputError(path, `must be an integer, got ${number}`);
      typed = number;
      break;
    }
    case "boolean": {
      const boolean = value === "true" ? true : value === "false" ? false : value;
      if (typeof boolean !== "boolean") throw new InvalidInputError(path, `must be true or false, got ${describe(value)}`);
      typed = boolean;
      break;
    }
    case "object":
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        throw new InvalidInputError(path, `must be an object, got ${describe(value)}`);
      }
      typed = value;
      break;
    default:
      if (typeof value !== "string") throw new InvalidInputError(path, `must be a string, got ${describe(value)}`);
      typed = value;
  }
  if (setting.choices.length > 0 && !setting.choices.includes(String(typed))) {
    throw new InvalidInputError(path, `must be one of ${setting.choices.map((c) => JSON.stringify(c)).join(", ")}, got ${describe(value)}`);
  }
  return typed;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return "a list";
  if (value === null) return "null";
  if (typeof value === "object") return "an object";
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

function validateSubscriptions(
  field: string,
  slug: string,
  definition: EntryDefinition,
  given: IntegrationSettingsProto["subscriptions"],
): IntegrationSubscriptionSettings[] {
  if (given.length > integrationLimits.maxSubscriptions) {
    throw new InvalidInputError(field, `at most ${integrationLimits.maxSubscriptions} subscriptions are allowed, got ${given.length}`);
  }
  const names = new Set<string>();
  return given.map((subscription, i) => {
    const path = `${field}[${i}]`;
    const name = subscription.name.trim();
    if (name === "") throw new InvalidInputError(`${path}.name`, "required");
    if (name.length > integrationLimits.maxNameLength) {
      throw new InvalidInputError(`${path}.name`, `is longer than ${integrationLimits.maxNameLength} characters`);
    }
    if (/\p{Cc}/u.test(name)) throw new InvalidInputError(`${path}.name`, "must not contain control characters");
    if (names.has(name)) throw new InvalidInputError(`${path}.name`, `${JSON.stringify(name)} is the name of another subscription`);
    names.add(name);
    if (subscription.subscribe.length > integrationLimits.maxSubscribeLength) {
      throw new InvalidInputError(`${path}.subscribe`, `is longer than ${integrationLimits.maxSubscribeLength} characters`);
    }
    const unparsed = subscriptionError(subscription.subscribe);
    if (unparsed) throw new InvalidInputError(`${path}.subscribe`, unparsed);
    if (subscription.action === "") throw new InvalidInputError(`${path}.action`, `required${actionList(definition)}`);
    const action = actionOf(definition, subscription.action);
    if (!action) {
      throw new InvalidInputError(
        `${path}.action`,
        `the entry ${JSON.stringify(slug)} has no action ${JSON.stringify(subscription.action.slice(0, 100))}${actionList(definition)}`,
      );
    }
    const mapping = subscription.mapping ?? {};
    for (const key of Object.keys(mapping)) {
      // `enable_batching` is the catalog's own switch for an action's batch
      // form, even where the action does not declare it as a field (its
      // Webhook entry's `send`); it takes a boolean.
      if (key === "enable_batching" && action.hasBatch) {
        if (typeof mapping[key] !== "boolean") throw new InvalidInputError(`${path}.mapping.${key}`, "must be true or false");
        continue;
      }
      if (!action.fields.some((f) => f.key === key)) {
        throw new InvalidInputError(
          `${path}.mapping.${key}`,
          `the action ${JSON.stringify(action.slug)} has no field ${JSON.stringify(key)}`,
        );
      }
    }
    if (JSON.stringify(mapping).length > integrationLimits.maxMappingBytes) {
      throw new InvalidInputError(`${path}.mapping`, `is longer than ${integrationLimits.maxMappingBytes} bytes`);
    }
    // The directives themselves, as the catalog's runtime would read them at delivery.
    const problem = mappingProblem(mapping);
    if (problem) throw new InvalidInputError(`${path}.mapping${problem.key ? `.${problem.key}` : ""}`, problem.message);
    return {
      name,
      subscribe: subscription.subscribe,
      action: action.slug,
      mapping: mapping as Record<string, unknown>,
      enabled: subscription.enabled ?? true,
    };
  });
}

const actionList = (definition: EntryDefinition) => ` (it has: ${Object.keys(definition.actions).join(", ")})`;

/** The settings keys of these settings that hold a secret (the entry's password fields that are set). */
export function storedSecretKeys(settings: IntegrationDestinationSettings): string[] {
  const definition = offeredEntry(settings.slug) ? loadEntry(settings.slug) : undefined;
  // An entry no longer offered (a catalog upgrade): every string value is treated as secret, to be safe.
  const secret = definition
    ? new Set(
        settingFields(definition)
          .filter((f) => f.secret)
          .map((f) => f.key),
      )
    : new Set(Object.keys(settings.settings));
  return Object.keys(settings.settings).filter((key) => secret.has(key) && settings.settings[key] !== "" && settings.settings[key] != null);
}

/** The settings as responses show them: secrets "***", named in secretSettings. */
export function integrationSettingsView(settings: IntegrationDestinationSettings) {
  const secrets = storedSecretKeys(settings);
  // In the entry's own order (the stored jsonb has its own), so lists read as GetIntegration's.
  const definition = offeredEntry(settings.slug) ? loadEntry(settings.slug) : undefined;
  const order = definition ? settingFields(definition).map((f) => f.key) : [];
  const keys = [
    ...order.filter((key) => key in settings.settings),
    ...Object.keys(settings.settings).filter((key) => !order.includes(key)),
  ];
  const shown: Record<string, unknown> = {};
  for (const key of keys) shown[key] = secrets.includes(key) ? maskedSecret : settings.settings[key];
  return {
    slug: settings.slug,
    settings: shown as JsonObject,
    subscriptions: settings.subscriptions.map((s) => ({
      name: s.name,
      subscribe: s.subscribe,
      action: s.action,
      mapping: s.mapping as JsonObject,
      enabled: s.enabled,
    })),
    secretSettings: secrets,
  };
}
