import { randomBytes } from "node:crypto";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { runMigrations } from "../src/db/migrate.js";
import { createPool } from "../src/db/pool.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** A database with every migration applied, which test databases are copied from. */
    templateDatabase: string;
  }
}

function databaseUrl(name: string): string {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  return url.toString();
}

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/**
 * Migrates one template database per test run (graphile-worker's way): each
 * test file's database is a copy of it (CREATE DATABASE ... TEMPLATE), so no
 * file pays for the migrations. The name is per run because other runs may
 * share the server; the template is dropped when the run ends.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (!process.env.DATABASE_URL) throw new Error("DATABASE_URL is not set: run the tests with `npm test`");
  const name = `waypost_template_${randomBytes(6).toString("hex")}`;
  await admin((client) => client.query(`CREATE DATABASE ${name}`));
  const pool = createPool({ connectionString: databaseUrl(name), max: 1 });
  try {
    await runMigrations(pool);
  } finally {
    // A template must have no connections while it is copied.
    await pool.end();
  }
  project.provide("templateDatabase", name);
  return async () => {
    await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  };
}
