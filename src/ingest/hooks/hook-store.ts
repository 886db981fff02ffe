import type { Queryable } from "../../db/pool.js";
import { insertHookRequest, insertHookRequests, type NewHookRequest } from "../../db/queries/hook-receipt.js";

export interface HookStore {
  /** Resolves once the request is committed (pending or duplicate). */
  store(request: NewHookRequest): Promise<{ id: string; duplicate: boolean }>;
}

interface Waiting {
  request: NewHookRequest;
  resolve: (stored: { id: string; duplicate: boolean }) => void;
  reject: (error: unknown) => void;
}

/** Most requests stored by one statement. */
const maxBatch = 200;

/**
 * Commits received requests, several per statement: while one statement
 * is in flight, the requests that arrive wait and then go together in the
 * next (at most `maxBatch`). A commit per request would cap the inbound URL
 * at the database's commit rate; this way a busy source costs a commit per
 * round trip, and a lone request still goes at once (no timer). Each
 * request is answered only after the statement holding it committed.
 */
export function createHookStore(options: { pool: Queryable }): HookStore {
  let queue: Waiting[] = [];
  let flushing = false;

  async function flush(): Promise<void> {
    flushing = true;
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      await storeBatch(batch);
    }
    flushing = false;
  }

  async function storeBatch(batch: Waiting[]): Promise<void> {
    try {
      if (batch.length === 1) {
        batch[0]!.resolve(await insertHookRequest(options.pool, batch[0]!.request));
        return;
      }
      const stored = await insertHookRequests(
        options.pool,
        batch.map((w) => w.request),
      );
      for (const [i, w] of batch.entries()) w.resolve(stored[i]!);
    } catch (error) {
      if (batch.length > 1 && (error as { code?: string }).code === "23505") {
        // Another process stored one of these keys meanwhile: one at a time, each statement deciding its own.
        for (const w of batch) await insertHookRequest(options.pool, w.request).then(w.resolve, w.reject);
        return;
      }
      for (const w of batch) w.reject(error);
    }
  }

  return {
    store(request) {
      return new Promise((resolve, reject) => {
        queue.push({ request, resolve, reject });
        if (!flushing) void flush();
      });
    },
  };
}
