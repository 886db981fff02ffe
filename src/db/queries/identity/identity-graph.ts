import type { Queryable } from "../../pool.js";

// The identity graph's reads and writes for the resolver: one statement
// each, over arrays, a page at a time.

export interface IdentifierRow {
  type: string;
  value: string;
  profile_id: string;
}

/**
 * The live profiles holding any of these identifiers, and the tombstones of
 * those a deletion forgot in the page's source: one statement, as the resolver waits for each
 * round trip behind ingest's work on the event loop.
 */
export async function selectIdentifierOwners(
  db: Queryable,
  types: readonly string[],
  values: readonly string[],
  sourceId: string,
): Promise<{ owners: IdentifierRow[]; tombstones: Array<{ type: string; value: string; deleted_at: Date }> }> {
  if (types.length === 0) return { owners: [], tombstones: [] };
  const { rows } = await db.query<{ type: string; value: string; profile_id: string | null; deleted_at: Date | null }>(
    `WITH k AS (SELECT * FROM unnest($1::text[], $2::text[]) k(type, value))
     SELECT i.type, i.value, i.profile_id, NULL::timestamptz AS deleted_at FROM k JOIN profile_identifiers i ON i.type = k.type AND i.value = k.value
     UNION ALL
     SELECT d.type, d.value, NULL, d.deleted_at FROM k JOIN deleted_identifiers d ON d.type = k.type AND d.value = k.value AND d.source_id = $3`,
    [types, values, sourceId],
  );
  const owners: IdentifierRow[] = [];
  const tombstones: Array<{ type: string; value: string; deleted_at: Date }> = [];
  for (const row of rows) {
    if (row.profile_id !== null) owners.push({ type: row.type, value: row.value, profile_id: row.profile_id });
    else if (row.deleted_at !== null) tombstones.push({ type: row.type, value: row.value, deleted_at: row.deleted_at });
  }
  return { owners, tombstones };
}

export interface ProfileShape {
  id: string;
  created_at: Date;
  limited: Array<{ type: string; value: string }>;
}

/** Profiles' ages, and their identifiers of the limited types (the rest are not needed to judge a merge). */
export async function selectProfileShapes(db: Queryable, ids: readonly string[], limitedTypes: readonly string[]): Promise<ProfileShape[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<ProfileShape>(
    `SELECT p.id, p.created_at,
            coalesce((SELECT jsonb_agg(jsonb_build_object('type', i.type, 'value', i.value)) FROM profile_identifiers i
                       WHERE i.profile_id = p.id AND i.type = ANY($2::text[])), '[]') AS limited
       FROM profiles p WHERE p.id = ANY($1::uuid[])`,
    [ids, limitedTypes],
  );
  return rows;
}

export async function insertProfiles(db: Queryable, profiles: ReadonlyArray<{ id: string; createdAt: Date }>): Promise<void> {
  if (profiles.length === 0) return;
  await db.query(
    `WITH made AS (INSERT INTO profiles (id, created_at) SELECT * FROM unnest($1::uuid[], $2::timestamptz[]) RETURNING id, created_at)
     INSERT INTO profile_figures (profile_id, first_seen, last_seen) SELECT id, created_at, created_at FROM made`,
    [profiles.map((p) => p.id), profiles.map((p) => p.createdAt)],
  );
}

/** Latest value per key wins: `at` is an ISO time, which sorts as text. */
const mergedTraits = (a: string, b: string) => `(SELECT coalesce(jsonb_object_agg(k, v), '{}') FROM (
    SELECT DISTINCT ON (k) k, v FROM (SELECT key AS k, value AS v FROM jsonb_each(${a}) UNION ALL SELECT key, value FROM jsonb_each(${b})) x
     ORDER BY k, v->>'at' DESC) y)`;
const summedCounts = (a: string, b: string) => `(SELECT coalesce(jsonb_object_agg(k, s), '{}') FROM (
    SELECT key AS k, sum(value::text::numeric) AS s FROM (SELECT * FROM jsonb_each(${a}) UNION ALL SELECT * FROM jsonb_each(${b})) x GROUP BY key) y)`;
/** mergedTraits and summedCounts over a group's rows, as aggregates (one object from many). */
const mergedTraitsOf = (column: string) => `(SELECT coalesce(jsonb_object_agg(k, v), '{}') FROM (
    SELECT DISTINCT ON (k) k, v FROM (SELECT e.key AS k, e.value AS v FROM jsonb_array_elements(jsonb_agg(${column})) t, jsonb_each(t) e) x
     ORDER BY k, v->>'at' DESC) y)`;
const summedCountsOf = (column: string) => `(SELECT coalesce(jsonb_object_agg(k, s), '{}') FROM (
    SELECT e.key AS k, sum(e.value::text::numeric) AS s FROM jsonb_array_elements(jsonb_agg(${column})) t, jsonb_each(t) e GROUP BY e.key) y)`;

/**
 * A page's merges, in four statements whatever their number: each `from`
 * (in order; an `into` may itself merge later in the page) goes into the
 * live profile at the end of its chain, its root. The root gets the
 * identifiers, figures and traits of every profile merged into it, and
 * every profile already merged into one of them points at it. A profile
 * merged on the way keeps its own figures (a merged profile's are never read).
 */
export async function mergeProfiles(db: Queryable, merges: ReadonlyArray<{ from: string; into: string }>): Promise<void> {
  if (merges.length === 0) return;
  const into = new Map(merges.map((merge) => [merge.from, merge.into]));
  const root = (id: string) => {
    let at = id;
    for (let next = into.get(at); next !== undefined; next = into.get(at)) at = next;
    return at;
  };
  const values = [merges.map((merge) => merge.from), merges.map((merge) => root(merge.from))];
  await db.query(
    `UPDATE profile_identifiers i SET profile_id = m.root FROM unnest($1::uuid[], $2::uuid[]) m(from_id, root) WHERE i.profile_id = m.from_id`,
    values,
  );
  await db.query(
    `UPDATE profiles r SET traits = ${mergedTraits("f.traits", "r.traits")}
       FROM (SELECT m.root, ${mergedTraitsOf("p.traits")} AS traits
               FROM unnest($1::uuid[], $2::uuid[]) m(from_id, root) JOIN profiles p ON p.id = m.from_id GROUP BY m.root) f
      WHERE r.id = f.root`,
    values,
  );
  await db.query(
    `UPDATE profile_figures r SET first_seen = least(r.first_seen, f.first_seen), last_seen = greatest(r.last_seen, f.last_seen),
            calls = r.calls + f.calls, event_counts = ${summedCounts("f.counts", "r.event_counts")}
       FROM (SELECT m.root, min(p.first_seen) AS first_seen, max(p.last_seen) AS last_seen, sum(p.calls) AS calls,
                    ${summedCountsOf("p.event_counts")} AS counts
               FROM unnest($1::uuid[], $2::uuid[]) m(from_id, root) JOIN profile_figures p ON p.profile_id = m.from_id GROUP BY m.root) f
      WHERE r.profile_id = f.root`,
    values,
  );
  await db.query(
    `UPDATE profiles p SET merged_into = m.root FROM unnest($1::uuid[], $2::uuid[]) m(from_id, root)
      WHERE p.id = m.from_id OR p.merged_into = m.from_id`,
    values,
  );
}

export async function insertIdentifiers(
  db: Queryable,
  links: ReadonlyArray<{ type: string; value: string; profileId: string; at: Date }>,
): Promise<void> {
  if (links.length === 0) return;
  await db.query(
    `INSERT INTO profile_identifiers (type, value, profile_id, first_seen)
     SELECT * FROM unnest($1::text[], $2::text[], $3::uuid[], $4::timestamptz[]) ON CONFLICT DO NOTHING`,
    [links.map((l) => l.type), links.map((l) => l.value), links.map((l) => l.profileId), links.map((l) => l.at)],
  );
}

export interface ProfileGrowth {
  id: string;
  calls: number;
  firstSeen: Date;
  lastSeen: Date;
  /** {key: {value, at, messageId}} */
  traits: Record<string, unknown>;
  counts: Record<string, number>;
}

/**
 * A page's calls added to their profiles' figures (every profile of the
 * page: a heap-only update of profile_figures) and traits (only the
 * profiles whose calls set some: identifies, mostly).
 */
export async function growProfiles(db: Queryable, growth: readonly ProfileGrowth[]): Promise<void> {
  if (growth.length === 0) return;
  await db.query(
    // Counts add the page's keys only.
    `UPDATE profile_figures p SET calls = p.calls + g.calls, first_seen = least(p.first_seen, g.first_seen), last_seen = greatest(p.last_seen, g.last_seen),
            event_counts = p.event_counts || (SELECT coalesce(jsonb_object_agg(key, coalesce((p.event_counts ->> key)::numeric, 0) + value::text::numeric), '{}')
                                                FROM jsonb_each(g.counts))
       FROM unnest($1::uuid[], $2::bigint[], $3::timestamptz[], $4::timestamptz[], $5::jsonb[]) g(id, calls, first_seen, last_seen, counts)
      WHERE p.profile_id = g.id`,
    [
      growth.map((g) => g.id),
      growth.map((g) => g.calls),
      growth.map((g) => g.firstSeen),
      growth.map((g) => g.lastSeen),
      growth.map((g) => JSON.stringify(g.counts)),
    ],
  );
  const traited = growth.filter((g) => Object.keys(g.traits).length > 0);
  if (traited.length === 0) return;
  await db.query(
    `UPDATE profiles p SET traits = ${mergedTraits("g.traits", "p.traits")}
       FROM unnest($1::uuid[], $2::jsonb[]) g(id, traits) WHERE p.id = g.id`,
    [traited.map((g) => g.id), traited.map((g) => JSON.stringify(g.traits))],
  );
}

export async function insertProfileCalls(db: Queryable, calls: ReadonlyArray<{ profileId: string; messagePk: string }>): Promise<void> {
  if (calls.length === 0) return;
  await db.query(
    "INSERT INTO profile_calls (profile_id, message_pk) SELECT * FROM unnest($1::uuid[], $2::bigint[]) ON CONFLICT DO NOTHING",
    [calls.map((c) => c.profileId), calls.map((c) => c.messagePk)],
  );
}

export interface HistoryRow {
  profileId: string;
  at: Date;
  kind: "created" | "merged" | "left_out" | "deleted";
  otherProfileId: string | null;
  identifierType: string | null;
  identifierValue: string | null;
  messageId: string | null;
  reason: string | null;
}

export async function insertHistory(db: Queryable, rows: readonly HistoryRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `INSERT INTO profile_history (profile_id, at, kind, other_profile_id, identifier_type, identifier_value, message_id, reason)
     SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[])`,
    [
      rows.map((r) => r.profileId),
      rows.map((r) => r.at),
      rows.map((r) => r.kind),
      rows.map((r) => r.otherProfileId),
      rows.map((r) => r.identifierType),
      rows.map((r) => r.identifierValue),
      rows.map((r) => r.messageId),
      rows.map((r) => r.reason),
    ],
  );
}
