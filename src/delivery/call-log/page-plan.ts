import { callOrderingKey } from "../../db/job-table/index.js";
import { type LoggedCall, type LogPage, type LogWindow, nextWindow } from "../../db/call-log/log-read.js";

/** The part of a page read that is sent now, and where the cursor goes after it. */
export interface PagePlan {
  page: LogPage;
  next: LogWindow;
}

export interface PagePlanOptions {
  window: LogWindow;
  page: LogPage;
  pageSize: number;
  /** The destination delivers each user's calls in order. */
  ordered: boolean;
}

/**
 * The part of a page read that goes now. With per-user ordering a page ends
 * before a user's second call: at most one call per user is in flight (the
 * per-call claim takes only a user's oldest), so a call that fails alone is
 * recorded as an exception, and its user's later calls wait behind it,
 * before the next page is read.
 */
export function planPage(options: PagePlanOptions): PagePlan {
  const { page, pageSize } = options;
  const cut = options.ordered ? firstRepeatedUser(page) : page.calls.length;
  if (cut === page.calls.length) return { page, next: nextWindow(options.window, page, pageSize) };
  const calls = page.calls.slice(0, cut);
  // The burst goes on after the last call taken: its bound stays, whatever the read held.
  return { page: { calls, upTo: page.upTo }, next: { seen: options.window.seen, upTo: page.upTo, after: calls.at(-1)!.position } };
}

export interface BatchWaitOptions {
  /** The calls of the page its kind would get (routing and shaping done). */
  sendable: number;
  /** The page read ended the burst (nothing more to read now). */
  endsBurst: boolean;
  /** When the page's first call came in (the clock's ms). */
  firstReceivedMs: number;
  /** How the kind fills a batch (undefined: it sends what it is given). */
  batchWindow: { calls: number; waitMs: number } | undefined;
  nowMs: number;
  /** Send what there is now, however few (settling, stopping). */
  flushing: boolean;
}

/**
 * Until when a page waits for more calls (undefined: it goes now): as long
 * as the kind would have held them, when they are the last there are and
 * fewer than its batch. Calls that routing holds back do not count: a
 * batch is of the calls sent.
 */
export function batchWaitUntil(options: BatchWaitOptions): number | undefined {
  const { batchWindow } = options;
  if (options.flushing || !batchWindow || !options.endsBurst) return undefined;
  if (options.sendable === 0 || options.sendable >= batchWindow.calls) return undefined;
  const untilMs = options.firstReceivedMs + batchWindow.waitMs;
  return options.nowMs < untilMs ? untilMs : undefined;
}

/** The index of the first call whose user already has a call earlier in the page (the page's length when none has). */
function firstRepeatedUser(page: LogPage): number {
  const users = new Set<string>();
  for (let i = 0; i < page.calls.length; i++) {
    const call = page.calls[i]!;
    const key = orderingKeyOf(call);
    if (key === null) continue;
    if (users.has(key)) return i;
    users.add(key);
  }
  return page.calls.length;
}

/**
 * The user key per-user ordering keys a call by: its userId, else the
 * anonymousId of its body (parsed only when there is no userId, or taken
 * from `body` when the caller parsed it already); null with neither.
 */
export function orderingKeyOf(call: LoggedCall, body?: Record<string, unknown>): string | null {
  if (call.userId) return call.userId;
  const anonymousId = (body ?? (JSON.parse(call.payload) as Record<string, unknown>)).anonymousId;
  return callOrderingKey(undefined, typeof anonymousId === "string" ? anonymousId : undefined);
}
