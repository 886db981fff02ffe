import { expect } from "vitest";
import { openJobTable } from "../../../src/db/citus/open-job-table.js";
import { singleNodeJobTable } from "../../../src/db/job-table/index.js";
import { createLogger } from "../../../src/logger.js";
import { testWith } from "../../helpers/fixtures.js";

// Which driver a start picks on a database without Citus: these run
// everywhere (the ones on a cluster are in convert.test.ts and test/citus/).
const test = testWith({ database: { max: 2 } });
const logger = createLogger("silent");

test("auto on one Postgres: the single-node driver", async ({ pool }) => {
  expect(await openJobTable(pool, { layout: "auto", shardCount: 32 }, logger)).toBe(singleNodeJobTable);
});

test("WAYPOST_JOB_TABLE=citus without the extension refuses to start, naming the setting and what to do", async ({ pool }) => {
  await expect(openJobTable(pool, { layout: "citus", shardCount: 32 }, logger)).rejects.toThrow(
    /WAYPOST_JOB_TABLE=citus, but the database has no citus extension: run CREATE EXTENSION citus/,
  );
  // Nothing was converted: the queue is an ordinary table still.
  const queue = await pool.query<{ kind: string }>("SELECT relkind::text AS kind FROM pg_class WHERE relname = 'delivery_queue'");
  expect(queue.rows[0]?.kind).toBe("r");
});
