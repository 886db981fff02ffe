import type { Queryable } from "../pool.js";

/** The NOTIFY channel that wakes the delivery loops (they LISTEN on it). */
export const deliveriesChannel = "waypost_deliveries";

/**
 * A select-list item that wakes the delivery loops when `condition` holds.
 * NOTIFY is delivered at commit, so a loop woken by it sees the new rows.
 */
export function notifyWhen(condition: string): string {
  return `CASE WHEN ${condition} THEN pg_notify('${deliveriesChannel}', '') END AS notified`;
}

/**
 * Wakes the delivery loops at commit, e.g. when a destination is enabled
 * again: its waiting deliveries (kept pending while it was paused) are due.
 */
export async function wakeWorkers(db: Queryable): Promise<void> {
  await db.query(`SELECT ${notifyWhen("true")}`);
}
