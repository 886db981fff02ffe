import type { IntegrationDestinationSettings, IntegrationSubscriptionSettings } from "../../../catalog/integration-settings.js";
import { actionsCore, type EntryDefinition, loadEntry } from "../../../catalog/catalog-entry.js";
import { type VendorContext, withVendorContext } from "../../../catalog/catalog-fetch.js";
import { type CompiledSubscriptions, compileSubscriptions } from "../../../catalog/subscriptions.js";
import type { SegmentEvent } from "../../../catalog/segment-event.js";
import { type SubscriptionVerdict, verdictOfError, verdictOfItem } from "./outcomes.js";
import { storedSecretKeys } from "./settings.js";

/** The catalog's Destination, typed as far as Waypost uses it. */
interface CatalogDestination {
  actions: Record<string, { definition: { performBatch?: unknown; fields?: Record<string, { default?: unknown }> } }>;
  validateSettings(settings: Record<string, unknown>): void;
  executeAction(slug: string, bundle: Record<string, unknown>): Promise<unknown>;
  executeBatch(slug: string, bundle: Record<string, unknown>): Promise<Array<Record<string, unknown>>>;
}

/** How a subscription's calls go in batches (undefined: one by one). */
export interface BatchPlan {
  size: number;
}

/** One subscription as the runner holds it: the mapping it runs with (the action's defaults filled in). */
export interface RunnableSubscription {
  index: number;
  name: string;
  action: string;
  mapping: Record<string, unknown>;
  batch: BatchPlan | undefined;
}

/**
 * What running an integration destination's actions needs, built once per
 * settings revision: the catalog's Destination for its entry, its
 * subscriptions parsed, its settings checked, the values to mask.
 */
export interface IntegrationRunner {
  revision: number;
  /** Where attempts that made no request say they went: `integration:<slug>`. */
  label: string;
  subscriptions: RunnableSubscription[];
  compiled: CompiledSubscriptions;
  /** The secret settings' values (masked in every attempt and preview). */
  secrets: string[];
  /** Why no action can run (an unknown entry or action, settings the catalog refuses); undefined: they can. */
  broken: string | undefined;
  /** Runs one subscription's action on one event; its requests go through `context`. */
  run(subscription: RunnableSubscription, event: SegmentEvent, context: VendorContext): Promise<SubscriptionVerdict>;
  /** Runs one subscription's batch form on events; one verdict per event (a throw is every event's). */
  runBatch(subscription: RunnableSubscription, events: SegmentEvent[], context: VendorContext): Promise<SubscriptionVerdict[]>;
}

/** The batch size when neither the mapping nor the action's field names one. */
const fallbackBatchSize = 100;

/**
 * Whether a subscription's calls go in batches: the action has a batch form
 * and its mapping turns `enable_batching` on (as in Segment: the mapping's
 * value, else the field's default). The batch size: the mapping's
 * `batch_size`, else the field's default, else 100.
 */
export function batchPlanOf(
  action: CatalogDestination["actions"][string] | undefined,
  mapping: Record<string, unknown>,
): BatchPlan | undefined {
  if (!action || typeof action.definition.performBatch !== "function") return undefined;
  const fields = action.definition.fields ?? {};
  const enabled = mapping.enable_batching ?? fields.enable_batching?.default;
  if (enabled !== true) return undefined;
  const size = Number(mapping.batch_size ?? fields.batch_size?.default);
  return { size: Number.isInteger(size) && size > 0 ? size : fallbackBatchSize };
}

/**
 * A setting named like a credential (apiKey, api_key, projectToken,
 * apiSecret...) that the catalog does not mark write-only: many entries
 * type their vendor's keys as plain strings.
 */
const credentialName = /(key|token|secret|password)$/i;

/**
 * The values masked in every recorded request (attempts and previews): the
 * write-only settings, and the settings named like credentials. Recorded
 * requests outlive the settings and are read by everyone who may read
 * deliveries, so a vendor key the catalog calls public is masked there too.
 */
function maskedSettingValues(settings: IntegrationDestinationSettings): string[] {
  const keys = new Set(storedSecretKeys(settings));
  for (const [key, value] of Object.entries(settings.settings)) if (typeof value === "string" && credentialName.test(key)) keys.add(key);
  return [...keys].map((key) => String(settings.settings[key]));
}

export function createIntegrationRunner(revision: number, settings: IntegrationDestinationSettings): IntegrationRunner {
  const core = actionsCore() as unknown as {
    Destination: new (definition: EntryDefinition) => CatalogDestination;
    defaultValues(fields: Record<string, unknown>): Record<string, unknown>;
    getAuthData(settings: Record<string, unknown>): Record<string, unknown>;
  };
  const definition = loadEntry(settings.slug);
  const secrets = maskedSettingValues(settings);
  let broken: string | undefined;
  let destination: CatalogDestination | undefined;
  if (!definition) broken = `the catalog has no entry "${settings.slug}"`;
  else {
    destination = new core.Destination(definition);
    try {
      destination.validateSettings(settings.settings);
    } catch (error) {
      broken = `settings: ${(error as Error).message}`;
    }
  }
  const auth = core.getAuthData(settings.settings);
  const subscriptions = settings.subscriptions.map((s: IntegrationSubscriptionSettings, index): RunnableSubscription => {
    const action = destination?.actions[s.action];
    const mapping = { ...(action ? core.defaultValues(action.definition.fields ?? {}) : {}), ...s.mapping };
    return { index, name: s.name, action: s.action, mapping, batch: batchPlanOf(action, mapping) };
  });
  const bundle = (subscription: RunnableSubscription) => ({
    mapping: subscription.mapping,
    settings: settings.settings,
    auth,
    features: {},
    statsContext: {},
    subscriptionMetadata: {},
  });
  const refusal = (subscription: RunnableSubscription): SubscriptionVerdict | undefined => {
    if (broken) return { outcome: "permanent", message: broken };
    if (!destination?.actions[subscription.action]) {
      return { outcome: "permanent", message: `the entry has no action "${subscription.action}"` };
    }
    return undefined;
  };
  return {
    revision,
    label: `integration:${settings.slug}`,
    subscriptions,
    compiled: compileSubscriptions(settings.subscriptions),
    secrets,
    broken,
    async run(subscription, event, context) {
      const refused = refusal(subscription);
      if (refused) return refused;
      try {
        await withVendorContext(context, () => destination!.executeAction(subscription.action, { ...bundle(subscription), event }));
        return { outcome: "success", message: null };
      } catch (error) {
        return verdictOfError(error, secrets);
      }
    },
    async runBatch(subscription, events, context) {
      const refused = refusal(subscription);
      if (refused) return events.map(() => refused);
      try {
        const statuses = await withVendorContext(context, () =>
          destination!.executeBatch(subscription.action, { ...bundle(subscription), events }),
        );
        return events.map((_, i) => verdictOfItem(statuses[i], secrets));
      } catch (error) {
        const verdict = verdictOfError(error, secrets);
        return events.map(() => verdict);
      }
    },
  };
}
