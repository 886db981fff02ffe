import type { JobTableConfig } from "../../config.js";
import type { Logger } from "../../logger.js";
import { StartupError } from "../../startup-error.js";
import { citusJobTable, type JobTableDriver, singleNodeJobTable } from "../job-table/index.js";
import type { Pool } from "../pool.js";
import { convertToCitus } from "./convert.js";
import { detectJobTableLayout, hasCitusExtension } from "./layout.js";

/**
 * The job table's driver for this database, chosen once at start after the
 * migrations: with WAYPOST_JOB_TABLE=citus a database that has the Citus
 * extension is converted first (once; later starts find it converted); then
 * the layout the catalogs show decides. Every process of an installation
 * reads the same catalogs, so they all pick the same driver.
 */
export async function openJobTable(pool: Pool, config: JobTableConfig, logger: Pick<Logger, "info">): Promise<JobTableDriver> {
  if (config.layout === "citus") {
    if (!(await hasCitusExtension(pool))) {
      throw new StartupError(
        "WAYPOST_JOB_TABLE=citus, but the database has no citus extension: run CREATE EXTENSION citus on the coordinator and add the workers first (docs/scaling.md)",
      );
    }
    const client = await pool.connect();
    try {
      if (await convertToCitus(client, { shardCount: config.shardCount, logger })) {
        logger.info({ shardCount: config.shardCount }, "converted the database to the Citus layout");
      }
    } finally {
      client.release();
    }
  }
  const layout = await detectJobTableLayout(pool);
  if (layout === "citus") logger.info("the job table is distributed by Citus: using the Citus driver");
  return layout === "citus" ? citusJobTable : singleNodeJobTable;
}
