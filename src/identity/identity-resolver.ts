import type { Clock } from "../clock.js";
import { type LoggedCall, nextWindow, readLog } from "../db/call-log/log-read.js";
import { lockIdentityCursor, lockIdentityGraph, saveIdentityCursor, sourcesToResolve } from "../db/queries/identity/identity-cursors.js";
import { deleteTombstonedCalls } from "../db/queries/identity/profile-deletion.js";
import { inTransaction, type Queryable } from "../db/pool.js";
import type { IdentityConfig } from "../identity-config.js";
import type { Logger } from "../logger.js";
import { type CallFacts, factsOfCall } from "./call-identifiers.js";
import { loadGraph, writePage } from "./graph-page.js";
import { identifierKey, planMerges, type ResolvedCall } from "./merge-plan.js";

// Resolves stored calls into profiles, behind ingest: a loop reads each
// source's calls by cursor (as the call log's loaders do), a page at a
// time, and works out the page's merges in memory (merge-plan.ts). Every
// page's transaction takes one advisory lock first, so two processes
// resolve one page after another, each seeing the other's profiles: the
// result is the one a single resolver gives, in the log's order.

const noDestination = "00000000-0000-0000-0000-000000000000";

export interface IdentityResolverOptions {
  pool: Queryable;
  clock: Clock;
  logger: Pick<Logger, "warn" | "error">;
  config: IdentityConfig;
  /** Between looks for new calls when the last one found none. */
  idleMs?: number;
}

export interface IdentityResolver {
  start(): void;
  stop(): Promise<void>;
  /** Resolves every call committed now; resolves once nothing is left (tests, a deletion that must see every profile). */
  caughtUp(): Promise<void>;
  /** Looks now rather than at the next idle tick. */
  wake(): void;
}

export function createIdentityResolver(options: IdentityResolverOptions): IdentityResolver {
  const { pool, config } = options;
  const idleMs = options.idleMs ?? 250;
  let running = false;
  let timer: NodeJS.Timeout | undefined;
  let loop: Promise<void> | undefined;
  let wakeNow: (() => void) | undefined;

  /** One page of one source; how many calls it read. */
  async function resolvePage(sourceId: string): Promise<number> {
    return inTransaction(pool, async (tx) => {
      await lockIdentityGraph(tx);
      const window = await lockIdentityCursor(tx, sourceId);
      if (!window) return 0;
      const page = await readLog(tx, { destinationId: noDestination, sourceId, window, limit: config.pageSize, checkPerCallBefore: null });
      await resolveCalls(tx, sourceId, page.calls);
      await saveIdentityCursor(tx, sourceId, nextWindow(window, page, config.pageSize));
      return page.calls.length;
    });
  }

  async function resolveCalls(tx: Queryable, sourceId: string, logged: readonly LoggedCall[]): Promise<void> {
    if (logged.length === 0) return;
    const facts = new Map<string, CallFacts>();
    for (const call of logged) {
      const found = factsOfCall(call.payload, config.rules);
      if (found && (found.identifiers.length > 0 || found.previousId)) facts.set(call.messagePk, found);
    }
    const graph = await loadGraph(tx, sourceId, [...facts.values()], config.rules);
    // A deleted person's calls received before the deletion and resolved only now go as the rest of them went.
    const forgotten = new Set(
      logged.filter((call) => facts.has(call.messagePk) && graph.deletedBefore(facts.get(call.messagePk)!, call.receivedAt)),
    );
    await deleteTombstonedCalls(
      tx,
      [...forgotten].map((call) => call.messagePk),
    );
    const calls: ResolvedCall[] = [];
    const resolved = logged.filter((call) => facts.has(call.messagePk) && !forgotten.has(call));
    for (const call of resolved) {
      const { identifiers, previousId } = facts.get(call.messagePk)!;
      // An alias's previous id is a userId the graph knows, or else an anonymousId.
      const previous =
        previousId === undefined
          ? []
          : [
              {
                type: graph.state.owners.has(identifierKey({ type: "user_id", value: previousId })) ? "user_id" : "anonymous_id",
                value: previousId,
              },
            ];
      calls.push({
        messagePk: call.messagePk,
        messageId: call.messageId,
        receivedAt: call.receivedAt,
        identifiers: [...identifiers, ...previous],
      });
    }
    const plan = planMerges(calls, graph.state, config.rules);
    await writePage(tx, plan, resolved, facts);
  }

  async function tick(): Promise<number> {
    let total = 0;
    for (const sourceId of await sourcesToResolve(pool)) {
      for (;;) {
        const read = await resolvePage(sourceId);
        total += read;
        if (read < config.pageSize || !running) break;
      }
    }
    return total;
  }

  async function run(): Promise<void> {
    while (running) {
      let read = 0;
      try {
        read = await tick();
      } catch (error) {
        options.logger.error({ err: error }, "identity resolution failed; trying again");
      }
      if (read > 0 || !running) continue;
      await new Promise<void>((resolve) => {
        wakeNow = resolve;
        timer = setTimeout(resolve, idleMs);
      });
      wakeNow = undefined;
    }
  }

  return {
    start() {
      if (running || !config.enabled) return;
      running = true;
      loop = run();
    },
    async stop() {
      running = false;
      if (timer) clearTimeout(timer);
      wakeNow?.();
      await loop;
    },
    async caughtUp() {
      // Pages read until one tick finds nothing: every call committed before this call is resolved.
      while ((await tick()) > 0);
    },
    wake() {
      wakeNow?.();
    },
  };
}
