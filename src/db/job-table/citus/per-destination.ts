import pg from "pg";
import type { Queryable } from "../../pool.js";

/** Items grouped by their destination, in the order each destination first appears. */
export function byDestination<T extends { destinationId: string }>(items: readonly T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(item.destinationId);
    if (group) group.push(item);
    else groups.set(item.destinationId, [item]);
  }
  return groups;
}

/**
 * Statements per destination run at most this many at once: each is a
 * single-shard statement, so a few in parallel keep several workers busy
 * without taking the pool's connections from the API.
 */
export const parallelStatements = 4;

/**
 * Runs `run` for each item, at most `parallelStatements` at once when `db` is
 * a pool (each query takes its own connection); on a client (a transaction)
 * the queries queue on its one connection anyway.
 */
export async function forEachLimited<T, R>(items: readonly T[], run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await run(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallelStatements, items.length) }, worker));
  return results;
}

/** Whether `db` is a pool (it hands out connections) rather than one client. */
export function isPool(db: Queryable): db is pg.Pool {
  return db instanceof pg.Pool;
}
