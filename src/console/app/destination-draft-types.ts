import type { KindName } from "../../delivery/kinds/descriptors.js";
import type { IntegrationDraft } from "./integration-draft.js";

// The destination form's state, apart from the code that builds it
// (destination-draft.ts loops over the kinds' forms, and their fields edit
// this state): both sides import it, so it lives in neither.

export interface HeaderDraft {
  name: string;
  value: string;
}

export interface WebhookDraft {
  url: string;
  headers: HeaderDraft[];
  /** Undefined: one call per POST. Fields as typed ("" leaves the server's default). */
  batch?: { maxCalls: string; maxBytes: string; maxWaitMs: string } | undefined;
}

/**
 * The destination form's state, as people edit it: what every destination
 * has, then each kind's part (its form in views/kind-forms.tsx fills and
 * sends it; destination-draft.ts builds and checks it).
 */
export interface DestinationDraft {
  /** Chosen on create; fixed afterwards. */
  kind: KindName;
  name: string;
  enabled: boolean;
  sourceIds: string[];
  /** Requests per second as typed; "" or "0" is no limit. */
  rateLimit: string;
  ordering: "none" | "per-user";
  // Webhook: the URLs and headers, the shared secret (keep it: edit only, set
  // a new one, or clear it), and on create whether to ask for a Standard
  // Webhooks signing secret.
  webhooks: WebhookDraft[];
  secretMode: "keep" | "set" | "clear";
  secret: string;
  generateSigningSecret: boolean;
  // Postgres: the warehouse URL (masked as the server shows it, on edit) and schema.
  postgresUrl: string;
  schema: string;
  // AMQP: the broker URL (masked on edit), exchange, routing key template, mandatory.
  amqpUrl: string;
  exchange: string;
  routingKey: string;
  mandatory: boolean;
  // NATS: the servers (one a line), subject template and credentials ("***" on edit when set).
  natsServers: string;
  subject: string;
  natsToken: string;
  natsUser: string;
  natsPassword: string;
  // Integration: the catalog entry, its settings as typed and the subscriptions (integration-draft.ts).
  integration: IntegrationDraft;
  /** Routing rules as typed: the filter's JSON ("" is none), one dropped path a line, the transform's source. */
  filter: string;
  dropFields: string;
  transform: string;
  /** Consent: the categories as typed (comma- or line-separated), and whether calls without preferences are held back. */
  consentCategories: string;
  requireConsent: boolean;
}
