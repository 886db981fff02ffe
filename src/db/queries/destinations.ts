import type { StoredSigningSecret } from "../../signing/standard-webhooks.js";
import type { Queryable } from "../pool.js";

/**
 * The columns kinds store their settings in, each kind using its own and
 * leaving the others empty (a kind maps its settings to and from them:
 * src/delivery/kinds/). A kind that stores something new adds its column
 * here and in a migration.
 */
export interface KindColumns {
  /** Webhook: the URLs and their static headers. */
  webhooks: Array<{ url: string; headers: Record<string, string> }>;
  /** Webhook: the X-Signature secret. */
  shared_secret: string | null;
  /** Webhook: Standard Webhooks secrets; expired ones are skipped when signing. */
  signing_secrets: StoredSigningSecret[];
  /** Postgres: the warehouse (its URL includes the password: never returned or logged). */
  postgres: { url: string; schema: string } | null;
  /** AMQP: the broker URL (with its password), exchange, routing key template, mandatory. */
  amqp: { url: string; exchange: string; routingKey: string; mandatory: boolean } | null;
  /** NATS: the servers, subject template and credentials. */
  nats: { servers: string[]; subject: string; token: string; user: string; password: string } | null;
  /** Integration: the catalog entry, its settings (secrets included) and subscriptions. */
  integration: {
    slug: string;
    settings: Record<string, unknown>;
    subscriptions: Array<{ name: string; subscribe: string; action: string; mapping: Record<string, unknown>; enabled: boolean }>;
  } | null;
  /** Lake: where its files go (the secret key in the clear), their format, flush and whether it is an archive. */
  lake: {
    url: string;
    endpoint: string;
    region: string;
    accessKeyId: string;
    secretAccessKey: string;
    format: "parquet" | "ndjson_gz";
    flushSeconds: number;
    maxFileMb: number;
    archive: boolean;
  } | null;
}

/** Each kind column, and whether it is jsonb (written as JSON text) or plain text. */
const kindColumns: Readonly<Record<keyof KindColumns, "jsonb" | "text">> = {
  webhooks: "jsonb",
  shared_secret: "text",
  signing_secrets: "jsonb",
  postgres: "jsonb",
  amqp: "jsonb",
  nats: "jsonb",
  integration: "jsonb",
  lake: "jsonb",
};
const kindColumnNames = Object.keys(kindColumns) as Array<keyof KindColumns>;

/**
 * The kind columns a kind routes calls by (its `routing`,
 * src/delivery/kinds/kind.ts): a destination with one set is read by routing
 * at ingest whatever its filter. Only a column's own kind sets it (the
 * table's kind check), so a set routing column says the destination's kind.
 */
const routingColumnSet = { integration: true } as const satisfies Partial<Record<keyof KindColumns, true>>;
export type RoutingColumn = keyof typeof routingColumnSet;
export const routingColumns = Object.keys(routingColumnSet) as RoutingColumn[];

/** SQL: whether the destination `alias` names has a routing column set (its kind routes calls itself). */
export function kindRoutesSql(alias: string): string {
  return routingColumns.length === 0 ? "false" : `(${routingColumns.map((column) => `${alias}.${column} IS NOT NULL`).join(" OR ")})`;
}

/** SQL: the routing columns of the destination `alias` names, as a select list (after others). */
export function routingColumnsSql(alias: string): string {
  return routingColumns.map((column) => `, ${alias}.${column}`).join("");
}

/** Every kind column empty: a kind's row is this with its own columns set. */
export const emptyKindColumns: Readonly<KindColumns> = {
  webhooks: [],
  shared_secret: null,
  signing_secrets: [],
  postgres: null,
  amqp: null,
  nats: null,
  integration: null,
  lake: null,
};

export interface DestinationRow extends KindColumns {
  id: string;
  name: string;
  enabled: boolean;
  /** The kind's name (src/delivery/kinds/registry.ts); its settings are in the kind columns. */
  kind: string;
  max_requests_per_second: number;
  ordering: "none" | "per_user";
  /** The endpoint's health (destination_health); null before its first attempt. */
  circuit_state: "closed" | "open" | "half_open" | null;
  consecutive_failures: number | null;
  probe_at: Date | null;
  backoff_until: Date | null;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  last_error: string | null;
  revision: number;
  created_at: Date;
  updated_at: Date;
  source_ids: string[];
  /** Routing rules: null or {} is no filter. */
  filter: Record<string, unknown> | null;
  drop_fields: string[];
  /** "" is no transform. */
  transform: string;
  /** Consent: categories a call's preferences must all grant ({} : none), and whether calls without preferences are held back. */
  consent_categories: string[];
  require_consent: boolean;
  /** Calls carry context.profileId. */
  add_profile_id: boolean;
  cursor_at: string;
}

const columns = `d.id, d.name, d.enabled, d.kind, ${kindColumnNames.map((c) => `d.${c}`).join(", ")}, d.max_requests_per_second, d.ordering,
  d.filter, d.drop_fields, d.transform, d.consent_categories, d.require_consent, d.add_profile_id, d.revision, d.created_at, d.updated_at,
  d.created_at::text AS cursor_at,
  h.state AS circuit_state, h.consecutive_failures, h.probe_at, h.backoff_until,
  h.last_success_at, h.last_failure_at, h.last_error,
  coalesce((SELECT array_agg(ds.source_id ORDER BY ds.source_id) FROM destination_sources ds
             WHERE ds.destination_id = d.id), '{}') AS source_ids`;

const tables = "destinations d LEFT JOIN destination_health h ON h.destination_id = d.id";

export async function selectDestination(db: Queryable, id: string, forUpdate = false): Promise<DestinationRow | undefined> {
  const lock = forUpdate ? "FOR UPDATE OF d" : "";
  const result = await db.query<DestinationRow>(`SELECT ${columns} FROM ${tables} WHERE d.id = $1 ${lock}`, [id]);
  return result.rows[0];
}

export async function listDestinationRows(
  db: Queryable,
  options: { sourceId?: string; after?: { createdAt: string; id: string }; limit: number },
): Promise<DestinationRow[]> {
  const result = await db.query<DestinationRow>(
    `SELECT ${columns} FROM ${tables}
      WHERE ($1::timestamptz IS NULL OR (d.created_at, d.id) > ($1, $2::uuid))
        AND ($3::uuid IS NULL OR EXISTS (SELECT 1 FROM destination_sources ds
                                          WHERE ds.destination_id = d.id AND ds.source_id = $3))
      ORDER BY d.created_at, d.id LIMIT $4`,
    [options.after?.createdAt ?? null, options.after?.id ?? null, options.sourceId ?? null, options.limit],
  );
  return result.rows;
}

/** A destination's settings as written by create and update. */
export interface DestinationWrite {
  id: string;
  name: string;
  enabled: boolean;
  kind: string;
  /** The kind's settings in its columns (the others are written empty). */
  columns: Partial<KindColumns>;
  /** 0: no limit. */
  maxRequestsPerSecond: number;
  ordering: DestinationRow["ordering"];
  filter: Record<string, unknown> | null;
  dropFields: readonly string[];
  transform: string;
  consentCategories: readonly string[];
  requireConsent: boolean;
  addProfileId: boolean;
  at: Date;
}

const json = (value: unknown) => (value === null ? null : JSON.stringify(value));

/** A kind column's value as written: its own, or empty; jsonb ones as JSON text. */
function kindColumnValue(columns: Partial<KindColumns>, column: keyof KindColumns): unknown {
  const value = columns[column] ?? emptyKindColumns[column];
  return kindColumns[column] === "jsonb" ? json(value) : value;
}

/** The written columns, once: each with its value. Both writes are built from this list. */
const writtenColumns: ReadonlyArray<readonly [column: string, value: (row: DestinationWrite) => unknown]> = [
  ["name", (row) => row.name],
  ["enabled", (row) => row.enabled],
  ["kind", (row) => row.kind],
  ...kindColumnNames.map((column) => [column, (row: DestinationWrite) => kindColumnValue(row.columns, column)] as const),
  ["max_requests_per_second", (row) => row.maxRequestsPerSecond],
  ["ordering", (row) => row.ordering],
  ["filter", (row) => json(row.filter)],
  ["drop_fields", (row) => row.dropFields],
  ["transform", (row) => row.transform],
  ["consent_categories", (row) => row.consentCategories],
  ["require_consent", (row) => row.requireConsent],
  ["add_profile_id", (row) => row.addProfileId],
  ["updated_at", (row) => row.at],
];

/** $1 is the id; the written columns follow in order. */
function destinationParams(row: DestinationWrite): unknown[] {
  return [row.id, ...writtenColumns.map(([, value]) => value(row))];
}

export async function insertDestination(db: Queryable, row: DestinationWrite): Promise<void> {
  const names = writtenColumns.map(([column]) => column);
  const values = names.map((_, i) => `$${i + 2}`);
  await db.query(
    `INSERT INTO destinations (id, ${names.join(", ")}, created_at) VALUES ($1, ${values.join(", ")}, $${names.length + 1})`,
    destinationParams(row),
  );
  // Every destination has its rate bucket, starting empty (it fills at the
  // destination's rate). A statement of its own: on Citus destinations is a
  // reference table and the buckets are distributed, which one statement
  // cannot write together.
  await db.query("INSERT INTO destination_rate_buckets (destination_id, tokens, refilled_at) VALUES ($1, 0, $2) ON CONFLICT DO NOTHING", [
    row.id,
    row.at,
  ]);
}

/** Writes new settings and moves the revision (the etag) on. */
export async function updateDestinationRow(db: Queryable, row: DestinationWrite): Promise<void> {
  const sets = writtenColumns.map(([column], i) => `${column} = $${i + 2}`);
  await db.query(`UPDATE destinations SET ${sets.join(", ")}, revision = revision + 1 WHERE id = $1`, destinationParams(row));
}

/** Writes a kind's columns alone (a kind action: a signing secret rotated) and moves the revision on. */
export async function updateKindColumns(db: Queryable, id: string, columns: Partial<KindColumns>, at: Date): Promise<void> {
  const names = kindColumnNames.filter((column) => columns[column] !== undefined);
  const sets = names.map((column, i) => `${column} = $${i + 2}`);
  await db.query(`UPDATE destinations SET ${sets.join(", ")}, revision = revision + 1, updated_at = $${names.length + 2} WHERE id = $1`, [
    id,
    ...names.map((column) => kindColumnValue(columns, column)),
    at,
  ]);
}

/**
 * Deletes a destination with its rate bucket, endpoint health and calls'
 * fates, in the caller's transaction. Those rows sit on Citus shards, where
 * no foreign key cascades from a reference table, so they are deleted here
 * in every layout. Its finished deliveries stay in the history until
 * retention drops them (the caller cancels the queued ones first).
 */
export async function deleteDestinationRow(db: Queryable, id: string): Promise<void> {
  // Children first: the keys of destination_sources do not cascade.
  await db.query("DELETE FROM destination_sources WHERE destination_id = $1", [id]);
  await db.query("DELETE FROM destinations WHERE id = $1", [id]);
  await db.query("DELETE FROM destination_rate_buckets WHERE destination_id = $1", [id]);
  await db.query("DELETE FROM destination_health WHERE destination_id = $1", [id]);
  await db.query("DELETE FROM call_fates WHERE destination_id = $1", [id]);
  await db.query("DELETE FROM log_cursors WHERE destination_id = $1", [id]);
}

export async function destinationExists(db: Queryable, id: string): Promise<boolean> {
  const result = await db.query("SELECT 1 FROM destinations WHERE id = $1", [id]);
  return (result.rowCount ?? 0) > 0;
}

/** The ids of the given sources that do not exist. */
export async function missingSourceIds(db: Queryable, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const result = await db.query<{ id: string }>(
    "SELECT i.id FROM unnest($1::uuid[]) AS i(id) WHERE NOT EXISTS (SELECT 1 FROM sources s WHERE s.id = i.id)",
    [ids],
  );
  return result.rows.map((r) => r.id);
}

export async function replaceDestinationSources(db: Queryable, destinationId: string, sourceIds: readonly string[]): Promise<void> {
  await db.query("DELETE FROM destination_sources WHERE destination_id = $1", [destinationId]);
  if (sourceIds.length > 0) {
    await db.query("INSERT INTO destination_sources (source_id, destination_id) SELECT unnest($1::uuid[]), $2", [sourceIds, destinationId]);
  }
}

/** A destination's delivery settings, as the delivery loop reads them (its kind maps the kind columns to its settings). */
export interface DestinationConfigRow extends KindColumns {
  id: string;
  name: string;
  enabled: boolean;
  kind: string;
  ordering: DestinationRow["ordering"];
  /** Moves on with every settings change (the etag). */
  revision: number;
  drop_fields: string[];
  transform: string;
  add_profile_id: boolean;
}

/**
 * The current settings of these destinations. The delivery loop keeps them
 * per destination and revision (the claim returns the revision), so an edit
 * applies to every delivery claimed after it commits.
 */
export async function loadDestinationConfigs(db: Queryable, ids: readonly string[]): Promise<Map<string, DestinationConfigRow>> {
  const result = await db.query<DestinationConfigRow>({
    name: "waypost_load_destination_configs",
    text: `SELECT id, name, enabled, kind, ${kindColumnNames.join(", ")}, ordering, revision, drop_fields, transform, add_profile_id
             FROM destinations WHERE id = ANY ($1::uuid[])`,
    values: [ids],
  });
  return new Map(result.rows.map((row) => [row.id, row]));
}

/** Names of the given destinations (deleted ones are missing). */
export async function selectDestinationNames(db: Queryable, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const result = await db.query<{ id: string; name: string }>("SELECT id, name FROM destinations WHERE id = ANY($1::uuid[])", [ids]);
  return new Map(result.rows.map((row) => [row.id, row.name]));
}
