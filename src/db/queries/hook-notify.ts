import { notifyChannel } from "../notify.js";
import type { Queryable } from "../pool.js";

// The wake-up channel of webhook requests, named here once (as the
// deliveries' channel is in db/job-table/notify.ts): the inbound URL
// NOTIFYs it after committing requests, every process's hook processor
// LISTENs on it. The payload is a source id. A wake-up is only a hint:
// processors also poll.

/** The channel (exported for tests that listen in). */
export const hooksChannel = "waypost_hooks";

/** Wakes every process's processor for these sources; send it after the commit. */
export async function notifyHookSources(db: Queryable, sourceIds: readonly string[]): Promise<void> {
  await notifyChannel(db, hooksChannel, sourceIds);
}
