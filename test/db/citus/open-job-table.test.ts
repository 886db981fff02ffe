import { afterAll, beforeAll, expect, test } from "vitest";
import { openJobTable } from "../../../src/db/citus/open-job-table.js";
import { singleNodeJobTable } from "../../../src/db/job-table/index.js";
import { createLogger } from "../../../src/logger.js";
import { openTestDatabase, type OpenTestDatabase } from "../../helpers/database.js";

// Which driver a start picks on a database without Citus: these run
// everywhere (the ones on a cluster are in convert.test.ts and test/citus/).
let db: OpenTestDatabase;
const logger = createLogger("silent");

beforeAll(async () => {
  db = await openTestDatabase({ max: 2 });
});
afterAll(() => db?.close());

test("auto on one Postgres: the single-node driver", async () => {
  expect(await openJobTable(db.pool, { layout: "auto", shardCount: 32 }, logger)).toBe(singleNodeJobTable);
});

test("WAYPOST_JOB_TABLE=citus without the extension refuses to start, naming the setting and what to do", async () => {
  await expect(openJobTable(db.pool, { layout: "citus", shardCount: 32 }, logger)).rejects.toThrow(
    /WAYPOST_JOB_TABLE=citus, but the database has no citus extension: run CREATE EXTENSION citus/,
  );
  // Nothing was converted: the queue is an ordinary table still.
  const queue = await db.pool.query<{ kind: string }>("SELECT relkind::text AS kind FROM pg_class WHERE relname = 'delivery_queue'");
  expect(queue.rows[0]?.kind).toBe("r");
});
