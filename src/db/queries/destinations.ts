import type { StoredSigningSecret } from "../../signing/standard-webhooks.js";
import type { Queryable } from "../pool.js";

/** The kinds of destination: where its deliveries go. */
export type DestinationKindName = "webhook" | "postgres";

/** A Postgres warehouse destination's settings (the URL includes its password: never returned or logged). */
export interface PostgresSettings {
  url: string;
  schema: string;
}

export interface DestinationRow {
  id: string;
  name: string;
  enabled: boolean;
  kind: DestinationKindName;
  /** Set for kind postgres only. */
  postgres: PostgresSettings | null;
  webhooks: Array<{ url: string; headers: Record<string, string> }>;
  shared_secret: string | null;
  max_requests_per_second: number;
  ordering: "none" | "per_user";
  signing_secrets: StoredSigningSecret[];
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
  cursor_at: string;
}

const columns = `d.id, d.name, d.enabled, d.kind, d.postgres, d.webhooks, d.shared_secret, d.signing_secrets, d.max_requests_per_second, d.ordering,
  d.filter, d.drop_fields, d.transform, d.revision, d.created_at, d.updated_at,
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
  kind: DestinationKindName;
  postgres: PostgresSettings | null;
  webhooks: DestinationRow["webhooks"];
  sharedSecret: string | null;
  signingSecrets: StoredSigningSecret[];
  /** 0: no limit. */
  maxRequestsPerSecond: number;
  ordering: DestinationRow["ordering"];
  filter: Record<string, unknown> | null;
  dropFields: readonly string[];
  transform: string;
  at: Date;
}

/** The parameters both writes take, in the order their statements number them. */
function destinationParams(row: DestinationWrite): unknown[] {
  return [
    row.id,
    row.name,
    row.enabled,
    JSON.stringify(row.webhooks),
    row.sharedSecret,
    row.at,
    JSON.stringify(row.signingSecrets),
    row.maxRequestsPerSecond,
    row.ordering,
    row.kind,
    row.postgres === null ? null : JSON.stringify(row.postgres),
    row.filter === null ? null : JSON.stringify(row.filter),
    row.dropFields,
    row.transform,
  ];
}

export async function insertDestination(db: Queryable, row: DestinationWrite): Promise<void> {
  await db.query(
    `INSERT INTO destinations (id, name, enabled, webhooks, shared_secret, signing_secrets, created_at, updated_at,
                               max_requests_per_second, ordering, kind, postgres, filter, drop_fields, transform)
     VALUES ($1, $2, $3, $4, $5, $7, $6, $6, $8, $9, $10, $11, $12, $13, $14)`,
    destinationParams(row),
  );
}

/** Writes new settings and moves the revision (the etag) on. */
export async function updateDestinationRow(db: Queryable, row: DestinationWrite): Promise<void> {
  await db.query(
    `UPDATE destinations SET name = $2, enabled = $3, webhooks = $4, shared_secret = $5, signing_secrets = $7,
            max_requests_per_second = $8, ordering = $9, kind = $10, postgres = $11, filter = $12, drop_fields = $13, transform = $14,
            revision = revision + 1, updated_at = $6 WHERE id = $1`,
    destinationParams(row),
  );
}

/** Replaces the Standard Webhooks secrets (a rotation) and moves the revision on. */
export async function updateSigningSecrets(db: Queryable, id: string, secrets: readonly StoredSigningSecret[], at: Date): Promise<void> {
  await db.query("UPDATE destinations SET signing_secrets = $2, revision = revision + 1, updated_at = $3 WHERE id = $1", [
    id,
    JSON.stringify(secrets),
    at,
  ]);
}

/** Deletes a destination; its deliveries and attempts go with it (ON DELETE CASCADE). */
export async function deleteDestinationRow(db: Queryable, id: string): Promise<void> {
  await db.query("DELETE FROM destinations WHERE id = $1", [id]);
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

/** A destination's delivery settings, as the delivery loop reads them. */
export interface DestinationConfigRow {
  id: string;
  /** Named on each attempt's span when tracing is on. */
  name: string;
  enabled: boolean;
  kind: DestinationKindName;
  postgres: PostgresSettings | null;
  webhooks: Array<{ url: string; headers: Record<string, string> }>;
  shared_secret: string | null;
  /** Standard Webhooks secrets; expired ones are skipped when signing. */
  signing_secrets: StoredSigningSecret[];
  ordering: DestinationRow["ordering"];
  /** Moves on with every settings change (the etag). */
  revision: number;
  drop_fields: string[];
  transform: string;
}

/**
 * The current settings of these destinations. The delivery loop keeps them
 * per destination and revision (the claim returns the revision), so an edit
 * applies to every delivery claimed after it commits.
 */
export async function loadDestinationConfigs(db: Queryable, ids: readonly string[]): Promise<Map<string, DestinationConfigRow>> {
  const result = await db.query<DestinationConfigRow>({
    name: "waypost_load_destination_configs",
    text: `SELECT id, name, enabled, kind, postgres, webhooks, shared_secret, signing_secrets, ordering, revision, drop_fields, transform
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
