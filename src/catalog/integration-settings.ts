/**
 * An integration destination's settings as the code holds them (and as the
 * `integration` column stores them): which catalog entry, its settings
 * (secrets in the clear here; responses mask them), and its subscriptions
 * (presets already filled in when a create named none).
 */
export interface IntegrationSubscriptionSettings {
  /** Unique within the destination; attempts and errors name it. */
  name: string;
  /** The catalog's subscription language. */
  subscribe: string;
  /** One of the entry's action slugs. */
  action: string;
  /** The action's fields in mapping directives; {} for the action's defaults. */
  mapping: Record<string, unknown>;
  enabled: boolean;
}

export interface IntegrationDestinationSettings {
  slug: string;
  settings: Record<string, unknown>;
  subscriptions: IntegrationSubscriptionSettings[];
}
