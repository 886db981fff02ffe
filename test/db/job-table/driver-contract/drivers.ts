import { afterAll, beforeAll, describe } from "vitest";
import { citusJobTable, type JobTableDriver, singleNodeJobTable } from "../../../../src/db/job-table/index.js";
import type { Pool } from "../../../../src/db/pool.js";
import { citusSkipReason, openCitusTestDatabase } from "../../../helpers/citus.js";
import { openTestDatabase } from "../../../helpers/database.js";

// The job-table driver's contract (River's riverdrivertest): every file of
// this folder runs its tests once per driver, with the same expectations.
// One Postgres always runs; Citus when WAYPOST_TEST_CITUS_URL names a
// cluster, and otherwise its suites are skipped and say why.

interface DriverUnderTest {
  name: string;
  driver: JobTableDriver;
  /** Why it does not run here; empty when it runs. */
  skipReason: string;
  open(): Promise<{ pool: Pool; close(): Promise<void> }>;
}

const drivers: DriverUnderTest[] = [
  { name: "one Postgres", driver: singleNodeJobTable, skipReason: "", open: () => openTestDatabase() },
  { name: "Citus", driver: citusJobTable, skipReason: citusSkipReason, open: () => openCitusTestDatabase() },
];

/** A migrated database of the suite's own, in the driver's layout: `pool` is set once the suite's tests run. */
export interface ContractDatabase {
  pool: Pool;
}

/**
 * `body`'s tests once per driver, each driver on a database of its own
 * (opened before the tests, dropped after them).
 */
export function describeEachDriver(what: string, body: (driver: JobTableDriver, db: ContractDatabase) => void): void {
  describe.each(drivers)("$name", (under) => {
    describe.skipIf(under.skipReason !== "")(`${what}${under.skipReason}`, () => {
      const db = {} as ContractDatabase;
      let close: (() => Promise<void>) | undefined;
      beforeAll(async () => {
        const opened = await under.open();
        db.pool = opened.pool;
        close = opened.close;
      }, 120_000);
      afterAll(async () => close?.());
      body(under.driver, db);
    });
  });
}
