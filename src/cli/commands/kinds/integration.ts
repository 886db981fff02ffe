import { readFileSync } from "node:fs";
import type { JsonObject } from "@bufbuild/protobuf";
import { type Destination, DestinationKind } from "../../../../gen/waypost/v1/destination_pb.js";
import { UsageError } from "../../errors.js";
import { collect } from "../../format.js";
import type { KindFlags } from "../destination-flag-types.js";

type SubscriptionInit = { name: string; subscribe: string; action: string; mapping?: JsonObject; enabled?: boolean };

/** --setting KEY=VALUE: the value as text (the server reads numbers and true/false for fields of those types). */
function parseSetting(text: string): [string, string] {
  const equals = text.indexOf("=");
  const key = equals > 0 ? text.slice(0, equals).trim() : "";
  if (!key) throw new UsageError(`--setting: "${text}" is not KEY=VALUE`);
  return [key, text.slice(equals + 1)];
}

const subscriptionKeys = new Set(["name", "subscribe", "action", "mapping", "enabled"]);

/** --subscriptions-file: a JSON array of {name, subscribe, action, mapping?, enabled?}. */
export function readSubscriptionsFile(file: string): SubscriptionInit[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new UsageError(
      `--subscriptions-file: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--subscriptions-file: ${file} is not JSON (${(error as Error).message})`);
  }
  if (!Array.isArray(value)) throw new UsageError(`--subscriptions-file: ${file} must hold a JSON array of subscriptions`);
  return value.map((item: unknown, i) => {
    const where = `--subscriptions-file: [${i}]`;
    if (typeof item !== "object" || item === null || Array.isArray(item)) throw new UsageError(`${where} is not an object`);
    const s = item as Record<string, unknown>;
    for (const key of Object.keys(s)) {
      if (!subscriptionKeys.has(key))
        throw new UsageError(`${where} has "${key}": a subscription has name, subscribe, action, mapping, enabled`);
    }
    for (const key of ["name", "subscribe", "action"]) {
      if (typeof s[key] !== "string") throw new UsageError(`${where}.${key} must be a string`);
    }
    if (s.mapping !== undefined && (typeof s.mapping !== "object" || s.mapping === null || Array.isArray(s.mapping))) {
      throw new UsageError(`${where}.mapping must be an object`);
    }
    if (s.enabled !== undefined && typeof s.enabled !== "boolean") throw new UsageError(`${where}.enabled must be true or false`);
    return {
      name: s.name as string,
      subscribe: s.subscribe as string,
      action: s.action as string,
      ...(s.mapping ? { mapping: s.mapping as JsonObject } : {}),
      ...(s.enabled !== undefined ? { enabled: s.enabled as boolean } : {}),
    };
  });
}

const given = (flags: Record<string, unknown>) =>
  flags.integration !== undefined || flags.setting !== undefined || flags.subscriptionsFile !== undefined;

/** A setting's value in one line (secrets come masked from the server). */
const settingText = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

export const integrationFlags: KindFlags = {
  flags: [
    {
      declare: (c, mode) => {
        c.option(
          "--integration <slug>",
          mode === "create"
            ? "a vendor tool from the catalog (waypost integrations list); implies --kind integration"
            : "switch to another catalog entry (give all its settings again)",
        );
        c.option("--setting <key=value>", "one of the entry's settings (repeat; waypost integrations show SLUG lists them)", collect);
        c.option(
          "--subscriptions-file <file>",
          mode === "create"
            ? "a JSON array of subscriptions {name, subscribe, action, mapping, enabled} (default: the entry's presets)"
            : "replaces the subscriptions (a JSON array)",
        );
      },
      apply(flags, into, current) {
        if (!given(flags)) return undefined;
        // Create: --integration alone says which kind.
        if (!current && into.kind === undefined) into.kind = DestinationKind.INTEGRATION;
        const stored = current?.integration;
        const slug = (flags.integration as string | undefined) ?? stored?.slug ?? "";
        const same = stored !== undefined && stored.slug === slug;
        // Unchanged settings are sent as Get showed them (masked secrets keep the stored ones).
        const settings: JsonObject = same ? { ...(stored.settings ?? {}) } : {};
        for (const [key, value] of ((flags.setting as string[] | undefined) ?? []).map(parseSetting)) settings[key] = value;
        const file = flags.subscriptionsFile as string | undefined;
        const subscriptions = file !== undefined ? readSubscriptionsFile(file) : same ? stored.subscriptions : [];
        into.integration = { slug, settings, subscriptions };
        return "integration";
      },
      needsCurrent: given,
    },
  ],
  missing: (flags) =>
    flags.integration === undefined ? "--kind integration needs --integration SLUG (waypost integrations list)" : undefined,
  target: (d) => (d.integration ? d.integration.slug : ""),
  details: (d: Destination) => {
    const integration = d.integration;
    if (!integration) return [];
    const settings = Object.entries(integration.settings ?? {}).map(([key, value]) => `${key}=${settingText(value)}`);
    return [
      ["integration", integration.slug] as const,
      ["settings", settings.length ? settings.join(" ") : "none"] as const,
      ...integration.subscriptions.map(
        (s) => [`subscription`, `${s.name}: ${s.action} when ${s.subscribe}${s.enabled === false ? " (disabled)" : ""}`] as const,
      ),
    ];
  },
};
