import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { IntegrationService } from "../../gen/waypost/v1/integration_pb.js";
import { loadEntry } from "../catalog/catalog-entry.js";
import {
  actionDescriptions,
  type FieldDescription,
  offeredEntries,
  offeredEntry,
  presetSubscriptions,
  settingFields,
} from "../catalog/catalog.js";
import { notFound } from "./errors.js";

/** The longest query ListIntegrations matches with (longer matches nothing anyway). */
const maxQueryLength = 200;

/**
 * IntegrationService (docs/integrations.md): the catalog entries Waypost
 * offers. Lists come from the committed index; GetIntegration loads the one
 * entry asked for (cached after its first use).
 */
export function createIntegrationService(): ServiceImpl<typeof IntegrationService> {
  const byName = [...offeredEntries()].sort((a, b) => a.name.localeCompare(b.name, "en") || a.slug.localeCompare(b.slug));
  return {
    async listIntegrations(req) {
      const query = req.query.trim().slice(0, maxQueryLength).toLowerCase();
      const matched = query === "" ? byName : byName.filter((row) => row.name.toLowerCase().includes(query) || row.slug.includes(query));
      return {
        integrations: matched.map((row) => ({
          slug: row.slug,
          name: row.name,
          description: row.description,
          actionCount: row.actionCount,
          batchActionCount: row.batchActionCount,
        })),
      };
    },
    async getIntegration(req) {
      const row = offeredEntry(req.slug);
      const definition = row && loadEntry(row.slug);
      if (!row || !definition) throw notFound("integration", req.slug.slice(0, 100));
      return {
        integration: {
          slug: row.slug,
          name: row.name,
          description: row.description,
          settings: settingFields(definition).map(fieldProto),
          actions: actionDescriptions(definition).map((action) => ({
            slug: action.slug,
            title: action.title,
            description: action.description,
            defaultSubscription: action.defaultSubscription,
            fields: action.fields.map(fieldProto),
            hasBatch: action.hasBatch,
          })),
          // The automatic ones: what a create without subscriptions gets (the others are Segment's event-specific suggestions).
          presets: presetSubscriptions(definition).map((preset) => ({
            name: preset.name,
            subscribe: preset.subscribe,
            action: preset.action,
            mapping: jsonOf(preset.mapping) as JsonObject,
          })),
        },
      };
    },
  };
}

function fieldProto(field: FieldDescription) {
  const value = field.default === undefined ? undefined : jsonOf(field.default);
  return {
    key: field.key,
    label: field.label,
    type: field.type,
    required: field.required,
    secret: field.secret,
    choices: field.choices,
    ...(value === undefined ? {} : { default: fromJson(ValueSchema, value) }),
    description: field.description,
    multiple: field.multiple,
  };
}

/** A definition's value as JSON (undefined dropped, as a Struct cannot hold it; functions are not JSON). */
function jsonOf(value: unknown): JsonValue | undefined {
  const text = JSON.stringify(value);
  return text === undefined ? undefined : (JSON.parse(text) as JsonValue);
}
