import { removeMessages } from "../../job-table/index.js";
import type { Queryable } from "../../pool.js";

// A deletion request reaches the whole person: every identifier of the
// profile holding the one asked for, every call resolved to it (or to a
// profile merged into it), and the profile itself. Its identifiers are kept
// as tombstones, so calls received before the request and resolved after it
// are deleted too, and no later merge brings the person back.

export interface ProfileToDelete {
  family: string[];
  identifiers: Array<{ type: string; value: string }>;
}

/** The profile holding the identifier, its family (it and every profile merged into it) and all its identifiers. */
export async function selectProfileToDelete(db: Queryable, type: string, value: string): Promise<ProfileToDelete | undefined> {
  const { rows } = await db.query<{ profile_id: string }>("SELECT profile_id FROM profile_identifiers WHERE type = $1 AND value = $2", [
    type,
    value,
  ]);
  const live = rows[0]?.profile_id;
  if (!live) return undefined;
  const family = await db.query<{ id: string }>("SELECT id FROM profiles WHERE id = $1 OR merged_into = $1", [live]);
  const identifiers = await db.query<{ type: string; value: string }>("SELECT type, value FROM profile_identifiers WHERE profile_id = $1", [
    live,
  ]);
  return { family: family.rows.map((row) => row.id), identifiers: identifiers.rows };
}

/** Deletes the calls resolved to the family in these sources (with their deliveries, attempts and fates): how many. */
export async function deleteProfileMessages(db: Queryable, family: readonly string[], sourceIds: readonly string[]): Promise<number> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT m.id FROM profile_calls pc JOIN messages m ON m.id = pc.message_pk
      WHERE pc.profile_id = ANY($1::uuid[]) AND m.source_id = ANY($2::uuid[]) AND m.type <> 'delete'`,
    [family, sourceIds],
  );
  return removeMessages(
    db,
    rows.map((row) => row.id),
  );
}

/**
 * Forgets the profile: its rows, its calls' links and its history; its
 * identifiers become tombstones at `at` in each of the request's sources.
 */
export async function forgetProfile(db: Queryable, profile: ProfileToDelete, sourceIds: readonly string[], at: Date): Promise<void> {
  await db.query(
    `INSERT INTO deleted_identifiers (type, value, source_id, deleted_at)
     SELECT i.type, i.value, s.id, $4::timestamptz FROM unnest($1::text[], $2::text[]) i(type, value), unnest($3::uuid[]) s(id)
     ON CONFLICT (type, value, source_id) DO UPDATE SET deleted_at = excluded.deleted_at`,
    [profile.identifiers.map((i) => i.type), profile.identifiers.map((i) => i.value), sourceIds, at],
  );
  await db.query("DELETE FROM profile_identifiers WHERE profile_id = ANY($1::uuid[])", [profile.family]);
  await db.query("DELETE FROM profile_calls WHERE profile_id = ANY($1::uuid[])", [profile.family]);
  await db.query("DELETE FROM profile_history WHERE profile_id = ANY($1::uuid[])", [profile.family]);
  await db.query("DELETE FROM profile_figures WHERE profile_id = ANY($1::uuid[])", [profile.family]);
  await db.query("DELETE FROM profiles WHERE id = ANY($1::uuid[])", [profile.family]);
}

/** The calls a resolver page found with a deleted person's identifiers: gone like the rest of them. */
export async function deleteTombstonedCalls(db: Queryable, messagePks: readonly string[]): Promise<number> {
  return messagePks.length === 0 ? 0 : removeMessages(db, messagePks);
}
