import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { convertToCitus } from "../../../src/db/citus/convert.js";
import { detectJobTableLayout } from "../../../src/db/citus/layout.js";
import { runMigrations } from "../../../src/db/migrate.js";
import { createPool } from "../../../src/db/pool.js";
import { citusSkipReason, citusUrl, createCitusTestDatabase, type CitusTestDatabase } from "../../helpers/citus.js";

describe.skipIf(!citusUrl)(`converting an installation to Citus${citusSkipReason}`, () => {
  let database: CitusTestDatabase;
  beforeAll(async () => {
    database = await createCitusTestDatabase({ convert: false });
  }, 120_000);
  afterAll(() => database?.drop());

  it("distributes the job table by destination and keeps every row and sequence", async () => {
    const pool = createPool({ connectionString: database.url, max: 2 });
    try {
      await runMigrations(pool);
      expect(await detectJobTableLayout(pool)).toBe("postgres");
      const client = await pool.connect();
      try {
        expect(await convertToCitus(client, { shardCount: 4 })).toBe(true);
        expect(await convertToCitus(client, { shardCount: 4 })).toBe(false);
      } finally {
        client.release();
      }
      expect(await detectJobTableLayout(pool)).toBe("citus");
      const tables = await pool.query<{ table: string; method: string }>(
        "SELECT logicalrelid::text AS table, partmethod AS method FROM pg_dist_partition WHERE logicalrelid::text NOT LIKE '%\\_2%' AND logicalrelid::text NOT LIKE '%default' ORDER BY 1",
      );
      expect(Object.fromEntries(tables.rows.map((r) => [r.table, r.method]))).toMatchObject({
        delivery_queue: "h",
        delivery_history: "h",
        messages: "h",
        sources: "n",
        destinations: "n",
      });
    } finally {
      await pool.end();
    }
  });
});
