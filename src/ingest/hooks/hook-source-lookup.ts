import type { Queryable } from "../../db/pool.js";
import { selectHookSourcesByTokenHashes } from "../../db/queries/hook-receipt.js";

export interface HookSourceLookup {
  /** The webhook source whose token hashes to `tokenHash`, read from the database now (never cached). */
  find(tokenHash: Buffer): Promise<{ id: string; webhook: Record<string, unknown> } | undefined>;
}

interface Waiting {
  hash: Buffer;
  resolve: (source: { id: string; webhook: Record<string, unknown> } | undefined) => void;
  reject: (error: unknown) => void;
}

/** Most tokens looked up by one statement. */
const maxBatch = 200;

/**
 * Looks tokens up in the database, several per statement: lookups that
 * arrive while one statement is in flight go together in the next. Nothing
 * is cached, so a rotated token stops working for every request that
 * arrives after the rotation committed.
 */
export function createHookSourceLookup(options: { pool: Queryable }): HookSourceLookup {
  let queue: Waiting[] = [];
  let running = false;

  async function run(): Promise<void> {
    running = true;
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      try {
        const rows = await selectHookSourcesByTokenHashes(
          options.pool,
          batch.map((w) => w.hash),
        );
        const byHash = new Map(rows.map((row) => [row.hook_token_hash.toString("hex"), { id: row.id, webhook: row.webhook }]));
        for (const w of batch) w.resolve(byHash.get(w.hash.toString("hex")));
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    running = false;
  }

  return {
    find(hash) {
      return new Promise((resolve, reject) => {
        queue.push({ hash, resolve, reject });
        if (!running) void run();
      });
    },
  };
}
