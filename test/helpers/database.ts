import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";

/** The Postgres server the tests use (test/run.mjs sets it, embedded or not). */
export function serverUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error("DATABASE_URL is not set: run the tests with `npm test`");
  return url;
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

export interface TestDatabaseOptions {
  /**
   * Copy the run's migrated template (default), or start empty: only tests
   * of the migrations themselves want an empty database.
   */
  migrated?: boolean;
}

/** One connection to `url` for `run`, ended whatever happens. */
export async function withClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

function withAdmin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  return withClient(serverUrl(), run);
}

/**
 * A fresh database per test file (graphile-worker's way): no test sees
 * another's rows. It is a copy of the template test/global-setup.ts
 * migrated once for the run, so it already has every table.
 */
export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const name = `waypost_test_${randomBytes(6).toString("hex")}`;
  const template = options.migrated === false ? "" : ` TEMPLATE ${inject("templateDatabase")}`;
  await withAdmin((client) => client.query(`CREATE DATABASE ${name}${template}`));
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => withAdmin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

export interface OpenTestDatabase {
  database: TestDatabase;
  pool: Pool;
  /** Ends the pool and drops the database. */
  close(): Promise<void>;
}

/** A migrated database of the test file's own, with a pool on it: the set-up most database tests share. */
export async function openTestDatabase(options: { max?: number } = {}): Promise<OpenTestDatabase> {
  const database = await createTestDatabase();
  const pool = createPool({ connectionString: database.url, ...(options.max ? { max: options.max } : {}) });
  return {
    database,
    pool,
    async close() {
      await pool.end();
      await database.drop();
    },
  };
}
