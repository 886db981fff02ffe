import type pg from "pg";
import type { PostgresSettings } from "../db/queries/destinations.js";
import { cachedIdentity, checkWarehouse } from "../warehouse/ownership.js";
import { invalidArgument } from "./errors.js";

/** Refuses warehouse settings that point at Waypost's own database or at a schema holding tables Waypost did not make. */
export type WarehouseGuard = (settings: PostgresSettings) => Promise<void>;

/**
 * The save-time look at a warehouse (one short connection). A warehouse that
 * does not answer is accepted: it may come up later, and the loader checks
 * that it is not Waypost's own database before it loads anything.
 */
export function createWarehouseGuard(pool: pg.Pool, timeoutMs = 5_000): WarehouseGuard {
  const ownIdentity = cachedIdentity(pool);
  return async (settings) => {
    const check = await checkWarehouse(settings.url, settings.schema, await ownIdentity(), timeoutMs);
    if (check.ok === false) throw invalidArgument(`destination.postgres.${check.field}`, check.reason);
  };
}
