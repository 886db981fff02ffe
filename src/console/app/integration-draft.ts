import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { Value } from "@bufbuild/protobuf/wkt";
import type { Destination } from "../../../gen/waypost/v1/destination_pb.js";
import type { Integration, IntegrationField, IntegrationPreset } from "../../../gen/waypost/v1/integration_pb.js";
import type { FieldErrors } from "./field-error.js";
import { parseJsonObject } from "./json-text.js";

/** What the server sends in place of a stored secret, and takes back as "keep it". */
export const maskedSecret = "***";

/** One subscription as people edit it: the mapping is the JSON text as typed. */
export interface SubscriptionDraft {
  name: string;
  subscribe: string;
  action: string;
  mapping: string;
  enabled: boolean;
}

/**
 * An integration destination's part of the form: the catalog entry (its
 * definition once loaded, which the settings form and the action menus are
 * built from), the settings as typed (text, or true/false for a checkbox),
 * and the subscriptions.
 */
export interface IntegrationDraft {
  slug: string;
  /** GetIntegration's answer for `slug`; undefined until it is loaded. */
  entry?: Integration | undefined;
  settings: Record<string, string | boolean>;
  subscriptions: SubscriptionDraft[];
}

export function emptyIntegrationDraft(): IntegrationDraft {
  return { slug: "", settings: {}, subscriptions: [] };
}

/** A setting or default as an input shows it. */
function textOf(value: JsonValue | undefined): string | boolean {
  if (value === undefined || value === null) return "";
  if (typeof value === "boolean") return value;
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(value);
  return JSON.stringify(value);
}

/** A google.protobuf.Value (a field's default) as plain JSON. */
export function jsonOfValue(value: Value | undefined): JsonValue | undefined {
  const kind = value?.kind;
  switch (kind?.case) {
    case "stringValue":
    case "numberValue":
    case "boolValue":
      return kind.value;
    case "nullValue":
      return null;
    case "structValue":
      return Object.fromEntries(Object.entries(kind.value.fields).map(([k, v]) => [k, jsonOfValue(v) ?? null]));
    case "listValue":
      return kind.value.values.map((v) => jsonOfValue(v) ?? null);
    default:
      return undefined;
  }
}

export function mappingText(mapping: JsonObject | undefined): string {
  return mapping && Object.keys(mapping).length > 0 ? JSON.stringify(mapping, null, 2) : "";
}

/** The draft of a stored integration destination: its secrets read "***", and stay so unless replaced. */
export function integrationDraftOf(destination: Destination | undefined): IntegrationDraft {
  const stored = destination?.integration;
  if (!stored) return emptyIntegrationDraft();
  return {
    slug: stored.slug,
    settings: Object.fromEntries(Object.entries(stored.settings ?? {}).map(([key, value]) => [key, textOf(value)])),
    subscriptions: stored.subscriptions.map((s) => ({
      name: s.name,
      subscribe: s.subscribe,
      action: s.action,
      mapping: mappingText(s.mapping),
      enabled: s.enabled !== false,
    })),
  };
}

/** A newly picked entry's draft: its settings' defaults, and its presets as the subscriptions to start from. */
export function integrationDraftFor(entry: Integration): IntegrationDraft {
  const settings: Record<string, string | boolean> = {};
  for (const field of entry.settings) {
    const fallback = jsonOfValue(field.default);
    if (fallback !== undefined) settings[field.key] = textOf(fallback);
    else if (field.type === "boolean") settings[field.key] = false;
  }
  return { slug: entry.slug, entry, settings, subscriptions: entry.presets.map(subscriptionOfPreset) };
}

export function subscriptionOfPreset(preset: IntegrationPreset): SubscriptionDraft {
  return { name: preset.name, subscribe: preset.subscribe, action: preset.action, mapping: mappingText(preset.mapping), enabled: true };
}

/** A setting as typed, in the JSON type its field takes; undefined leaves it out (empty). */
function settingValue(field: IntegrationField | undefined, typed: string | boolean): JsonValue | undefined {
  if (typeof typed === "boolean") return typed;
  if (typed === "") return undefined;
  // The stored secret is kept by sending its mask back, whatever the field's type.
  if (typed === maskedSecret) return typed;
  switch (field?.type) {
    case "number":
    case "integer": {
      // Not a number: sent as typed, and the server names the field in its refusal.
      const number = Number(typed.trim());
      return typed.trim() !== "" && Number.isFinite(number) ? number : typed;
    }
    case "object":
      try {
        return JSON.parse(typed) as JsonValue;
      } catch {
        return typed;
      }
    default:
      return typed;
  }
}

/** What the page refuses before sending: mappings that are not JSON objects, named as the server names fields. */
export function integrationProblems(draft: IntegrationDraft): FieldErrors {
  const problems: FieldErrors = {};
  if (draft.slug === "") problems["integration.slug"] = "pick an entry of the catalog";
  draft.subscriptions.forEach((s, i) => {
    const parsed = parseJsonObject(s.mapping);
    if (parsed.problem !== undefined) problems[`integration.subscriptions[${i}].mapping`] = parsed.problem;
  });
  return problems;
}

/**
 * The integration as the API takes it. No subscriptions: the server uses
 * the entry's presets. Mappings must have passed integrationProblems.
 */
export function integrationRequestOf(draft: IntegrationDraft): {
  slug: string;
  settings: JsonObject;
  subscriptions: Array<{ name: string; subscribe: string; action: string; mapping: JsonObject; enabled: boolean }>;
} {
  const fields = new Map(draft.entry?.settings.map((f) => [f.key, f]));
  const settings: JsonObject = {};
  for (const [key, typed] of Object.entries(draft.settings)) {
    const value = settingValue(fields.get(key), typed);
    if (value !== undefined) settings[key] = value;
  }
  return {
    slug: draft.slug,
    settings,
    subscriptions: draft.subscriptions.map((s) => {
      const parsed = parseJsonObject(s.mapping);
      return {
        name: s.name.trim(),
        subscribe: s.subscribe.trim(),
        action: s.action,
        mapping: parsed.problem === undefined ? parsed.object : {},
        enabled: s.enabled,
      };
    }),
  };
}
