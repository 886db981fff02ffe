import { callOrderingKey } from "../../db/job-table/index.js";
import { type LogPage, type LogWindow, nextWindow } from "../../db/call-log/log-read.js";

/** What to do with a page just read: send (some of) it, or wait for more calls to fill the kind's batch. */
export type PagePlan = { kind: "send"; page: LogPage; next: LogWindow } | { kind: "wait"; untilMs: number };

export interface PagePlanOptions {
  window: LogWindow;
  page: LogPage;
  pageSize: number;
  /** The destination delivers each user's calls in order. */
  ordered: boolean;
  /** How its kind fills a batch (undefined: it sends what it is given). */
  batchWindow: { calls: number; waitMs: number } | undefined;
  nowMs: number;
  /** Send what there is now, however few (settling, stopping). */
  flushing: boolean;
}

/**
 * Plans a page, as the per-call loop's batching and ordering would have
 * sent its calls:
 * - a page of fewer calls than the kind's batch, all of the burst, whose
 *   first call came in less than the kind's wait ago, waits for more (the
 *   kind would have held them as long);
 * - with per-user ordering, a page ends before a user's second call: at most
 *   one call per user is in flight (the per-call claim takes only a user's
 *   oldest), so a call that fails alone is recorded as an exception, and its
 *   user's later calls wait behind it, before the next page is read.
 */
export function planPage(options: PagePlanOptions): PagePlan {
  const { page, pageSize, batchWindow } = options;
  const endsBurst = page.calls.length < pageSize;
  if (!options.flushing && batchWindow && endsBurst && page.calls.length < batchWindow.calls) {
    const untilMs = page.calls[0]!.receivedAt.getTime() + batchWindow.waitMs;
    if (options.nowMs < untilMs) return { kind: "wait", untilMs };
  }
  const cut = options.ordered ? firstRepeatedUser(page) : page.calls.length;
  if (cut === page.calls.length) return { kind: "send", page, next: nextWindow(options.window, page, pageSize) };
  const calls = page.calls.slice(0, cut);
  // The burst goes on after the last call taken: its bound stays, whatever the read held.
  return {
    kind: "send",
    page: { calls, upTo: page.upTo },
    next: { seen: options.window.seen, upTo: page.upTo, after: calls.at(-1)!.position },
  };
}

/** The index of the first call whose user already has a call earlier in the page (the page's length when none has). */
function firstRepeatedUser(page: LogPage): number {
  const users = new Set<string>();
  for (let i = 0; i < page.calls.length; i++) {
    const call = page.calls[i]!;
    const key = callOrderingKey(call.userId ?? undefined, call.userId ? undefined : anonymousIdOf(call.payload));
    if (key === null) continue;
    if (users.has(key)) return i;
    users.add(key);
  }
  return page.calls.length;
}

function anonymousIdOf(payload: string): string | undefined {
  const value = (JSON.parse(payload) as { anonymousId?: unknown }).anonymousId;
  return typeof value === "string" ? value : undefined;
}
