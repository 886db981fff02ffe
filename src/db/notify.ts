import type { Queryable } from "./pool.js";

/**
 * Sends a NOTIFY on `channel` for each payload, in one statement (delivered
 * at commit, or at once outside a transaction). Postgres folds a payload
 * repeated in one transaction into one notification.
 */
export async function notifyChannel(db: Queryable, channel: string, payloads: readonly string[]): Promise<void> {
  await db.query("SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload", [channel, payloads]);
}
