// @ts-check
// The identity scenario's stored graph: N identifiers already resolved into
// profiles, written with SQL (generate_series) rather than through the
// resolver, kept in a database of its own on the server and copied for each
// run (CREATE DATABASE … TEMPLATE), because building 10,000,000 takes minutes.
import pg from "pg";
import { runMigrations } from "../../dist/src/db/migrate.js";

/** Every identifier value is this many characters, so the load generator writes them into a template's bytes. */
export const identifierWidth = 12;

const numbered = (/** @type {string} */ letter, /** @type {number} */ n) => `${letter}${String(n).padStart(identifierWidth - 1, "0")}`;
/** A known user's userId (profile `i`, 1-based). */
export const knownUserId = (/** @type {number} */ i) => numbered("u", i);
/** The anonymousId a known user's profile holds beside its userId. */
export const knownUserAnonymousId = (/** @type {number} */ i) => numbered("a", i);
/** The anonymousId of an anonymous-only profile (`j`, 1-based): a visitor never identified. */
export const anonymousOnlyId = (/** @type {number} */ j) => numbered("o", j);

/**
 * How `identifiers` split: 40 % of them are user_ids of profiles that also hold one
 * anonymous_id (80 % of the identifiers), the rest anonymous-only profiles of one anonymous_id.
 * @param {number} identifiers
 */
export function graphShape(identifiers) {
  const users = Math.floor(identifiers * 0.4);
  const anonymousOnly = identifiers - 2 * users;
  return { identifiers, users, anonymousOnly, profiles: users + anonymousOnly };
}

/** @typedef {ReturnType<typeof graphShape>} GraphShape */

/** A profile's id from its number: deterministic, so identifiers point at it without a join. */
const profileIdSql = (/** @type {string} */ k) => `lpad(to_hex(${k}), 32, '0')::uuid`;

// When the stored profiles were made: users 300 to 100 days ago, anonymous-only ones in the last 60 days.
const userCreatedSql = "now() - interval '300 days' + interval '200 days' * k / $1::int";
const anonymousCreatedSql = "now() - interval '60 days' + interval '59 days' * j / $2::int";

/**
 * Fills a migrated database's profiles and profile_identifiers with the graph of
 * `identifiers` (graphShape), as the resolver would have left it: the tables'
 * keys and indexes are dropped for the load and built again after it (as
 * defined in the database, whatever the migrations made them), then VACUUM
 * ANALYZE. Users' profiles are the older ones (300 to 100 days old, with an
 * email and a plan as traits), anonymous-only ones 60 days or younger.
 * @param {pg.ClientBase} client a connection to the database (not in a transaction)
 * @param {number} identifiers
 * @param {(step: string) => void} [progress]
 * @returns {Promise<GraphShape>}
 */
export async function fillIdentityGraph(client, identifiers, progress = () => {}) {
  const shape = graphShape(identifiers);
  const tables = ["profiles", "profile_figures", "profile_identifiers"];
  await client.query("SET maintenance_work_mem = '1GB'");
  const { rows: constraints } = await client.query(
    `SELECT conrelid::regclass::text AS tbl, conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE conrelid = ANY($1::regclass[]) AND contype IN ('p', 'u')`,
    [tables],
  );
  const { rows: indexes } = await client.query(
    `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ANY($1::text[])
        AND indexname <> ALL($2::text[])`,
    [tables, constraints.map((c) => c.conname)],
  );
  for (const index of indexes) await client.query(`DROP INDEX ${index.indexname}`);
  for (const c of constraints) await client.query(`ALTER TABLE ${c.tbl} DROP CONSTRAINT ${c.conname}`);
  const { users, anonymousOnly } = shape;
  progress(`profiles: ${users} users, ${anonymousOnly} anonymous-only`);
  // Users: created 300 to 100 days ago, seen since; an email and a plan as identify set them.
  await client.query(
    `INSERT INTO profiles (id, created_at, traits)
     SELECT ${profileIdSql("k")}, t,
            jsonb_build_object(
              'email', jsonb_build_object('value', 'u' || k || '@example.com', 'at', t, 'messageId', 'seed-' || k),
              'plan', jsonb_build_object('value', (ARRAY['free', 'pro', 'team'])[1 + k % 3], 'at', t, 'messageId', 'seed-' || k))
       FROM generate_series(1, $1::int) k, LATERAL (SELECT ${userCreatedSql} AS t) x`,
    [users],
  );
  await client.query(
    `INSERT INTO profile_figures (profile_id, first_seen, last_seen, calls, event_counts)
     SELECT ${profileIdSql("k")}, t, t + interval '1 day' * (k % 90), 2 + k % 40, jsonb_build_object('Order Completed', 1 + k % 40, '(identify)', 1)
       FROM generate_series(1, $1::int) k, LATERAL (SELECT ${userCreatedSql} AS t) x`,
    [users],
  );
  // Anonymous-only: created in the last 60 days, a few pages each.
  await client.query(
    `INSERT INTO profiles (id, created_at)
     SELECT ${profileIdSql("$1::int + j")}, t FROM generate_series(1, $2::int) j, LATERAL (SELECT ${anonymousCreatedSql} AS t) x`,
    [users, anonymousOnly],
  );
  await client.query(
    `INSERT INTO profile_figures (profile_id, first_seen, last_seen, calls, event_counts)
     SELECT ${profileIdSql("$1::int + j")}, t, t, 1 + j % 5, jsonb_build_object('(page)', 1 + j % 5)
       FROM generate_series(1, $2::int) j, LATERAL (SELECT ${anonymousCreatedSql} AS t) x`,
    [users, anonymousOnly],
  );
  progress("profile_identifiers");
  const width = identifierWidth - 1;
  await client.query(
    `INSERT INTO profile_identifiers (type, value, profile_id, first_seen)
     SELECT type, letter || lpad(k::text, ${width}, '0'), ${profileIdSql("k")}, now() - interval '300 days' + interval '200 days' * k / $1::int
       FROM (VALUES ('anonymous_id', 'a'), ('user_id', 'u')) v(type, letter), generate_series(1, $1::int) k`,
    [users],
  );
  await client.query(
    `INSERT INTO profile_identifiers (type, value, profile_id, first_seen)
     SELECT 'anonymous_id', 'o' || lpad(j::text, ${width}, '0'), ${profileIdSql("$1::int + j")},
            now() - interval '60 days' + interval '59 days' * j / $2::int
       FROM generate_series(1, $2::int) j`,
    [users, anonymousOnly],
  );
  progress("keys and indexes");
  for (const c of constraints) await client.query(`ALTER TABLE ${c.tbl} ADD CONSTRAINT ${c.conname} ${c.def}`);
  for (const index of indexes) await client.query(index.indexdef);
  progress("vacuum analyze");
  await client.query("VACUUM (ANALYZE) profiles, profile_figures, profile_identifiers");
  return shape;
}

/** The marker table a finished build leaves: a database without it (a build cut short) is built again. */
const markerTable = "bench_identity_graph";

/**
 * The database of the stored graph of `identifiers` on the server at `serverUrl`,
 * named `name`: reused when it holds that graph (its pending migrations applied),
 * else built (dropped first if it holds another or an unfinished one).
 * @param {string} serverUrl
 * @param {{ identifiers: number, name?: string, progress?: (step: string) => void }} options
 * @returns {Promise<{ name: string, shape: GraphShape, reused: boolean, build_s: number, built_at: string }>}
 */
export async function preparedIdentityDatabase(serverUrl, { identifiers, name = "waypost_bench_identity", progress = () => {} }) {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const exists = await onServer(
    serverUrl,
    async (admin) => (await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])).rowCount,
  );
  if (exists) {
    const marker = await withPool(url.toString(), async (pool) => {
      const { rows } = await pool.query(`SELECT to_regclass('${markerTable}') IS NOT NULL AS present`);
      if (!rows[0].present) return undefined;
      const found = (await pool.query(`SELECT identifiers, build_s, built_at FROM ${markerTable}`)).rows[0];
      if (found && Number(found.identifiers) === identifiers) await runMigrations(pool);
      return found;
    });
    if (marker && Number(marker.identifiers) === identifiers) {
      return {
        name,
        shape: graphShape(identifiers),
        reused: true,
        build_s: Number(marker.build_s),
        built_at: new Date(marker.built_at).toISOString(),
      };
    }
    progress(`dropping ${name}: it holds ${marker ? `${marker.identifiers} identifiers` : "an unfinished build"}`);
    await onServer(serverUrl, (admin) => admin.query(`DROP DATABASE ${name} WITH (FORCE)`));
  }
  const started = performance.now();
  await onServer(serverUrl, (admin) => admin.query(`CREATE DATABASE ${name}`));
  await withPool(url.toString(), (pool) => runMigrations(pool));
  const shape = await withClient(url.toString(), async (client) => {
    const filled = await fillIdentityGraph(client, identifiers, progress);
    const buildS = Math.round((performance.now() - started) / 100) / 10;
    await client.query(
      `CREATE TABLE ${markerTable} (identifiers bigint NOT NULL, build_s numeric NOT NULL, built_at timestamptz NOT NULL)`,
    );
    await client.query(`INSERT INTO ${markerTable} VALUES ($1, $2, now())`, [identifiers, buildS]);
    return filled;
  });
  return {
    name,
    shape,
    reused: false,
    build_s: Math.round((performance.now() - started) / 100) / 10,
    built_at: new Date().toISOString(),
  };
}

/**
 * A copy of the prepared database for one run (FILE_COPY: the files as they are, no WAL per page),
 * so runs do not see each other's profiles; dropped after.
 * @param {string} serverUrl
 * @param {string} template
 * @returns {Promise<import("./postgres.mjs").Database & { copy_s: number }>}
 */
export async function copyOfDatabase(serverUrl, template) {
  const name = `${template}_run_${Math.random().toString(16).slice(2, 10)}`;
  const started = performance.now();
  await onServer(serverUrl, (admin) => admin.query(`CREATE DATABASE ${name} TEMPLATE ${template} STRATEGY FILE_COPY`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    copy_s: Math.round((performance.now() - started) / 100) / 10,
    drop: () => onServer(serverUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
  };
}

/**
 * @template T
 * @param {string} url
 * @param {(client: pg.Client) => Promise<T>} run
 */
async function withClient(url, run) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/**
 * @template T
 * @param {string} serverUrl
 * @param {(client: pg.Client) => Promise<T>} run
 */
const onServer = (serverUrl, run) => withClient(serverUrl, run);

/**
 * @template T
 * @param {string} url
 * @param {(pool: pg.Pool) => Promise<T>} run
 */
async function withPool(url, run) {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    return await run(pool);
  } finally {
    await pool.end();
  }
}
