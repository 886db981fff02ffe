import type { Queryable } from "../../pool.js";

// Profiles as ProfileService reads them.

export interface ProfileRow {
  id: string;
  created_at: Date;
  first_seen: Date;
  last_seen: Date;
  calls: string;
  traits: Record<string, { value: unknown; at: string; messageId: string }>;
  event_counts: Record<string, number>;
  merged_ids: string[];
  identifiers: Array<{ type: string; value: string; first_seen: string }>;
}

/** The live profile of a profile id (a merged one's survivor), or of an identifier. */
export async function liveProfileId(
  db: Queryable,
  by: { profileId: string } | { type: string; value: string },
): Promise<string | undefined> {
  const { rows } =
    "profileId" in by
      ? await db.query<{ id: string }>("SELECT coalesce(merged_into, id) AS id FROM profiles WHERE id = $1", [by.profileId])
      : await db.query<{ id: string }>("SELECT profile_id AS id FROM profile_identifiers WHERE type = $1 AND value = $2", [
          by.type,
          by.value,
        ]);
  return rows[0]?.id;
}

/** A live profile with its identifiers and the ids merged into it (each list at most `maxListed`). */
export async function selectProfile(db: Queryable, id: string, maxListed = 1000): Promise<ProfileRow | undefined> {
  const { rows } = await db.query<ProfileRow>(profileSql("$1::uuid", "$2"), [id, maxListed]);
  return rows[0];
}

/**
 * The live profile of a profile id (a merged one's survivor) or of an
 * identifier, in one statement: GetProfile's whole read, so a busy API
 * process waits for one round trip, not two.
 */
export async function selectLiveProfile(
  db: Queryable,
  by: { profileId: string } | { type: string; value: string },
  maxListed = 1000,
): Promise<ProfileRow | undefined> {
  const { rows } =
    "profileId" in by
      ? await db.query<ProfileRow>(profileSql("(SELECT coalesce(merged_into, id) FROM profiles WHERE id = $1)", "$2"), [
          by.profileId,
          maxListed,
        ])
      : await db.query<ProfileRow>(profileSql("(SELECT profile_id FROM profile_identifiers WHERE type = $1 AND value = $2)", "$3"), [
          by.type,
          by.value,
          maxListed,
        ]);
  return rows[0];
}

function profileSql(id: string, maxListed: string): string {
  return `SELECT p.id, p.created_at, f.first_seen, f.last_seen, f.calls, p.traits, f.event_counts,
            ARRAY(SELECT m.id FROM profiles m WHERE m.merged_into = p.id ORDER BY m.created_at LIMIT ${maxListed}) AS merged_ids,
            coalesce((SELECT jsonb_agg(jsonb_build_object('type', i.type, 'value', i.value, 'first_seen', i.first_seen) ORDER BY i.first_seen)
                        FROM (SELECT * FROM profile_identifiers WHERE profile_id = p.id ORDER BY first_seen LIMIT ${maxListed}) i), '[]') AS identifiers
       FROM profiles p JOIN profile_figures f ON f.profile_id = p.id WHERE p.id = ${id} AND p.merged_into IS NULL`;
}

/** The profile and every profile merged into it: whose calls and history are the person's. */
export async function profileFamily(db: Queryable, id: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>("SELECT id FROM profiles WHERE id = $1 OR merged_into = $1", [id]);
  return rows.map((row) => row.id);
}

export interface ProfileEventRow {
  pk: string;
  message_id: string;
  source_id: string;
  type: string;
  user_id: string | null;
  received_at: Date;
  payload: string;
}

export async function selectProfileEvents(
  db: Queryable,
  family: readonly string[],
  beforePk: string | undefined,
  limit: number,
): Promise<ProfileEventRow[]> {
  const { rows } = await db.query<ProfileEventRow>(
    `SELECT m.id AS pk, m.message_id, m.source_id, m.type, m.user_id, m.received_at, m.payload
       FROM profile_calls pc JOIN messages m ON m.id = pc.message_pk
      WHERE pc.profile_id = ANY($1::uuid[]) AND ($2::bigint IS NULL OR pc.message_pk < $2)
      ORDER BY pc.message_pk DESC LIMIT $3`,
    [family, beforePk ?? null, limit],
  );
  return rows;
}

/** Live profiles whose trait `key` holds exactly `value` (JSON). */
export async function searchProfilesByTrait(db: Queryable, key: string, value: unknown, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    "SELECT id FROM profiles WHERE merged_into IS NULL AND traits @> jsonb_build_object($1::text, jsonb_build_object('value', $2::jsonb)) LIMIT $3",
    [key, JSON.stringify(value), limit],
  );
  return rows.map((row) => row.id);
}

/** Live profiles holding an identifier starting with `prefix` (of `type`, when given). */
export async function searchProfilesByIdentifier(
  db: Queryable,
  prefix: string,
  type: string | undefined,
  limit: number,
): Promise<string[]> {
  const escaped = prefix.replace(/[\\%_]/g, (char) => `\\${char}`);
  const { rows } = await db.query<{ id: string }>(
    `SELECT DISTINCT profile_id AS id FROM (
       SELECT profile_id FROM profile_identifiers WHERE value LIKE $1 || '%' AND ($2::text IS NULL OR type = $2) LIMIT $3 * 20) i LIMIT $3`,
    [escaped, type ?? null, limit],
  );
  return rows.map((row) => row.id);
}

export interface ProfileHistoryRow {
  at: Date;
  kind: string;
  profile_id: string;
  other_profile_id: string | null;
  identifier_type: string | null;
  identifier_value: string | null;
  reason: string | null;
  message_id: string | null;
}

export async function selectProfileHistory(db: Queryable, family: readonly string[], limit: number): Promise<ProfileHistoryRow[]> {
  const { rows } = await db.query<ProfileHistoryRow>(
    `SELECT at, kind, profile_id, other_profile_id, identifier_type, identifier_value, reason, message_id
       FROM profile_history WHERE profile_id = ANY($1::uuid[]) ORDER BY id DESC LIMIT $2`,
    [family, limit],
  );
  return rows;
}

/** The live profile of each of these identifiers that has one, keyed "type:value". */
export async function profilesOfIdentifiers(
  db: Queryable,
  identifiers: ReadonlyArray<{ type: string; value: string }>,
): Promise<Map<string, string>> {
  if (identifiers.length === 0) return new Map();
  const { rows } = await db.query<{ type: string; value: string; profile_id: string }>(
    `SELECT i.type, i.value, i.profile_id FROM unnest($1::text[], $2::text[]) k(type, value)
       JOIN profile_identifiers i ON i.type = k.type AND i.value = k.value`,
    [identifiers.map((i) => i.type), identifiers.map((i) => i.value)],
  );
  return new Map(rows.map((row) => [`${row.type}:${row.value}`, row.profile_id]));
}
