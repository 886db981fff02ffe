import type pg from "pg";

/**
 * The staging table of one sync: a session TEMP table on the connection the
 * sync holds. Temp tables are not WAL-logged and live in the backend's own
 * buffers (spilling to disk), no other session sees them, and a crashed
 * process leaves nothing behind: Postgres drops them with the session.
 *
 * user_id is the primary key, so a user listed twice (in one chunk or across
 * chunks) counts once, and the diff can merge-join it with audience_members.
 */
export const stageTable = "pg_temp.waypost_audience_stage";

export async function createStage(client: pg.PoolClient): Promise<void> {
  // A stage left by an earlier sync whose cleanup failed would make CREATE
  // fail; such connections are destroyed, but this costs nothing.
  await client.query(`DROP TABLE IF EXISTS ${stageTable}`);
  await client.query(
    `CREATE TEMP TABLE waypost_audience_stage (
       user_id text PRIMARY KEY,
       -- The trait value's JSON text, exactly as the identify call carries it.
       value_text text NOT NULL
     )`,
  );
}

/**
 * Adds one chunk with a single INSERT ... SELECT FROM unnest: one round trip
 * and one plan per chunk, whatever its size. `valueTexts` undefined means an
 * audience: every member's value is `true`. Within one chunk the caller has
 * already kept only the last value per user (ON CONFLICT DO UPDATE may not
 * touch a row twice in one statement); across chunks the later value wins.
 */
export async function stageChunk(
  client: pg.PoolClient,
  userIds: readonly string[],
  valueTexts: readonly string[] | undefined,
): Promise<void> {
  if (userIds.length === 0) return;
  if (valueTexts === undefined) {
    await client.query(
      `INSERT INTO ${stageTable} (user_id, value_text)
       SELECT u, 'true' FROM unnest($1::text[]) AS u
       ON CONFLICT (user_id) DO NOTHING`,
      [userIds],
    );
    return;
  }
  await client.query(
    `INSERT INTO ${stageTable} (user_id, value_text)
     SELECT u, v FROM unnest($1::text[], $2::text[]) AS s(u, v)
     ON CONFLICT (user_id) DO UPDATE SET value_text = EXCLUDED.value_text`,
    [userIds, valueTexts],
  );
}

/**
 * Gives the planner real statistics before the diff: autovacuum never
 * analyses temp tables, and a million rows estimated as a few hundred would
 * get a nested-loop plan.
 */
export async function analyzeStage(client: pg.PoolClient): Promise<void> {
  await client.query(`ANALYZE ${stageTable}`);
}

export async function dropStage(client: pg.PoolClient): Promise<void> {
  await client.query(`DROP TABLE IF EXISTS ${stageTable}`);
}

/**
 * An audience by profile: the staged profile ids become their people's
 * userIds (a merged profile's id stands for its survivor; two ids of one
 * person count once, the later staged value kept). Ids with no profile, or
 * whose person has no userId yet, leave the stage: how many did.
 */
export async function profilesToUsers(client: pg.PoolClient): Promise<number> {
  const before = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${stageTable}`);
  await client.query(
    `CREATE TEMP TABLE waypost_audience_people AS
       SELECT DISTINCT ON (u.value) u.value AS user_id, s.value_text
         FROM ${stageTable} s
         JOIN profiles p ON p.id::text = s.user_id
         JOIN profile_identifiers u ON u.profile_id = coalesce(p.merged_into, p.id) AND u.type = 'user_id'
        ORDER BY u.value, s.ctid DESC`,
  );
  await client.query(`TRUNCATE ${stageTable}`);
  await client.query(`INSERT INTO ${stageTable} (user_id, value_text) SELECT user_id, value_text FROM pg_temp.waypost_audience_people`);
  await client.query("DROP TABLE pg_temp.waypost_audience_people");
  const after = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${stageTable}`);
  return before.rows[0]!.n - after.rows[0]!.n;
}
