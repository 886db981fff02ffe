import type pg from "pg";
import type { Clock } from "../../clock.js";
import type { DeliveryConfig } from "../../config.js";
import { advanceLogCursor, type CallAttempts, type LogAdvance, recordHeldBatch } from "../../db/call-log/log-advance.js";
import { endLogBurst, type HeldAttempt, holdLogCursor, type LogCursor } from "../../db/call-log/log-cursors.js";
import { selectWaitingUsers } from "../../db/call-log/log-destinations.js";
import { burstEnd, type LogPage, type LogWindow, readLog } from "../../db/call-log/log-read.js";
import type { DeliveryCompletion } from "../../db/job-table/index.js";
import { type Queryable, withTransaction } from "../../db/pool.js";
import type { Logger } from "../../logger.js";
import type { RouteRules } from "../../routing/route-rules.js";
import { shapeBody } from "../../routing/shape-body.js";
import { sandboxKey, type TransformSandboxes } from "../../sandbox/transform-sandbox.js";
import type { DeliveryRuntime } from "../delivery-runtime.js";
import { type AnyDestination, completionOf, takesCallsAsStored } from "../kinds/registry.js";
import { withProfileIds } from "../../identity/profile-context.js";
import { earlierTries, heldAfter, heldAttemptsOf } from "./call-attempts.js";
import { type PageContext, type PageOutcome, preparePage, sendPage } from "./log-page.js";
import { batchWaitUntil, orderingKeyOf, planPage } from "./page-plan.js";

/** What working a cursor needs, built once by the loader. */
export interface CursorRunContext {
  pool: pg.Pool;
  runtime: Pick<DeliveryRuntime, "deliver" | "flush" | "batchWindow">;
  config: DeliveryConfig;
  sandboxes: TransformSandboxes;
  clock: Clock;
  logger: Logger;
  pageSize: number;
  /** The destination as it is now, and its compiled routing rules (undefined: gone). */
  destinationOf(id: string): Promise<{ destination: AnyDestination; rules: RouteRules } | undefined>;
  /** Endpoint health: folds the page's results into the destination's health row in the page's transaction. */
  recordHealth(tx: Queryable, completions: readonly DeliveryCompletion[]): Promise<() => void>;
  /** Exceptions were queued: the per-call loop should look. */
  onQueued(): void;
  /** A page's results were recorded (the loop's "completed" event and metrics, as for per-call results). */
  onCompleted(completions: readonly DeliveryCompletion[]): void;
  /** Whether to send what there is without waiting for a kind's batch to fill (settling, stopping). */
  flushing(): boolean;
  /** A mark of the calls announced so far (taken before a read; see deferrals.ts). */
  markCalls(): number;
  /** The cursor waits for more calls until `untilMs` (the clock's ms): not claimed here before then, unless calls arrive (or arrived since `mark`). */
  defer(cursor: LogCursor, untilMs: number, mark: number): void;
}

/** Settings are read again at most this often while a cursor is worked (a change applies to pages read after). */
const settingsMaxAgeMs = 1_000;
/** Calls received this long after a destination moved onto the log may still have been routed per call by a slower process. */
const movedSkewMs = 60_000;

/** Pages sent and not yet recorded, at most (per-user ordering: one, as the next page reads who waits behind this one's exceptions). */
const sendDepth = 2;

/** A page handed to its kind whose outcome is not recorded yet. */
interface SentPage {
  from: LogCursor;
  upTo: LogPage["upTo"];
  next: LogWindow;
  /** Its calls (their messages' ids): the cursor's held attempts of them go once it is recorded. */
  pks: Set<string>;
  sending: Promise<PageOutcome>;
}

/**
 * Works one leased cursor until it has read everything there is, its lease
 * is lost, or a page fails as a whole. Pages are pipelined: the next page
 * is read while the current one is routed, and up to two pages are with
 * the kind at once (the second is routed and handed over while the first's
 * batch is still being delivered), their records written in order. When a
 * page fails as a whole the cursor holds at it and a later page already
 * sent is sent again after it (the same window gives the same batches, so
 * a kind's idempotence keys name them the same). A crash between a page's
 * send and its record sends it again from the same window.
 */
export async function runCursor(context: CursorRunContext, cursor: LogCursor, token: string, held: () => boolean): Promise<void> {
  const { pool } = context;
  const checkPerCallBefore = cursor.logSince ? new Date(cursor.logSince.getTime() + movedSkewMs) : null;
  // The calls announced before each read: a page that waits for more must not miss one announced while it was read.
  let mark = context.markCalls();
  let readMark = mark;
  // A read, send or record in flight is awaited later: marked handled at once, so its failure (a lost connection) is
  // thrown where it is awaited instead of crashing the process as an unhandled rejection.
  const read = (window: LogWindow) => {
    mark = context.markCalls();
    return handled(
      readLog(pool, { destinationId: cursor.destinationId, sourceId: cursor.sourceId, window, limit: pageSize, checkPerCallBefore }),
    );
  };
  let settings = await context.destinationOf(cursor.destinationId);
  let settingsAt = Date.now();
  const pageSize = pageSizeOf(context, settings?.destination);
  let window = cursor.window;
  let pending = read(window) as Promise<LogPage> | undefined;
  let recording: Promise<boolean> = Promise.resolve(true);
  const sent: SentPage[] = [];
  // The attempts of the head page's earlier tries (it failed as a whole): its calls list them before this try's.
  let heldAttempts = cursor.held;
  const earlier = earlierTries(heldAttempts);

  /** Records the oldest page sent, or holds the cursor at it; false: stop working the cursor. */
  async function settleOldest(destinationId: string): Promise<boolean> {
    const page = sent.shift()!;
    const outcome = await page.sending;
    // The previous page's record first: the cursor moves in order.
    if (!(await recording)) return false;
    if (outcome.kind === "hold") {
      // Later pages sent meanwhile go again after this one; their attempts are kept all the same (stats), though
      // only this page's calls list theirs (the later calls' next try is their first).
      const later = await Promise.all(sent.splice(0).map((p) => p.sending.catch(() => undefined)));
      const laterRows = later.flatMap((o) => o?.rows ?? []);
      const added = heldAttemptsOf(heldAttempts, outcome.rows);
      await holdCursor(context, page.from, token, { ...outcome, rows: [...outcome.rows, ...laterRows] }, added, destinationId);
      return false;
    }
    const { from, upTo, next } = page;
    // Records are written in order, and a failed one ends the run: what stays held follows each.
    heldAttempts = heldAfter(heldAttempts, page.pks) ?? [];
    const advance = { cursor: from, token, now: context.clock.now(), upTo, next, held: heldAttempts, ...outcome };
    recording = handled(recordPage(context, advance, outcome));
    return true;
  }

  try {
    let going = true;
    while (pending !== undefined && held()) {
      readMark = mark;
      const readPage: LogPage = await pending;
      pending = undefined;
      if (readPage.calls.length === 0) {
        // Nothing left in the burst (its last page was full): its end is recorded, and a new snapshot read.
        if (window.upTo === null) break;
        while (going && sent.length > 0) going = await settleOldest(cursor.destinationId);
        if (!going || !(await recording)) break;
        const next = burstEnd(window.upTo);
        if (!(await endLogBurst(pool, { ...cursor, window }, token, next, context.clock.now()))) break;
        window = next;
        pending = read(window);
        continue;
      }
      if (Date.now() - settingsAt > settingsMaxAgeMs) {
        settings = await context.destinationOf(cursor.destinationId);
        settingsAt = Date.now();
      }
      if (!settings?.destination.enabled) break;
      const { destination } = settings;
      const ordered = destination.ordering === "per_user";
      const { page, next } = planPage({ window, page: readPage, pageSize, ordered });
      // The burst goes on: its next page is read while this one is delivered.
      if (next.upTo !== null) pending = read(next);
      const from = { ...cursor, window };
      // Per-user ordering reads which users wait behind an exception: the previous page's must be recorded first.
      if (ordered && !(await recording)) break;
      const pageContext = await pageContextOf(context, page, settings, earlier);
      const prepared = await preparePage(from, page.calls, pageContext);
      const untilMs = batchWaitUntil({
        sendable: prepared.sendable,
        endsBurst: next.upTo === null,
        firstReceivedMs: page.calls[0]!.receivedAt.getTime(),
        batchWindow: context.runtime.batchWindow(destination),
        nowMs: context.clock.now().getTime(),
        flushing: context.flushing(),
      });
      if (untilMs !== undefined) {
        context.defer(cursor, untilMs, readMark);
        break;
      }
      const pks = new Set(page.calls.map((call) => call.messagePk));
      sent.push({ from, upTo: page.upTo, next, pks, sending: handled(sendPage(from, page.calls, prepared, pageContext)) });
      window = next;
      while (going && sent.length >= (ordered ? 1 : sendDepth)) going = await settleOldest(destination.id);
      if (!going) break;
      // The burst is over: the next read takes a new snapshot (calls committed meanwhile).
      pending ??= read(next);
    }
    while (going && sent.length > 0) going = await settleOldest(cursor.destinationId);
  } finally {
    await Promise.allSettled(sent.map((p) => p.sending));
    await recording.catch(() => false);
    await pending?.catch(() => undefined);
  }
}

/** The promise, with a handler that does nothing: awaiting it still throws. */
function handled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

/**
 * Pages are never longer than this, whatever a kind's batch: a lake's 50,000-call flushes are read 5,000 at a time
 * (pages of 10,000 were no faster and held 100 MB more in flight).
 */
const maxPageSize = 5_000;

/**
 * The calls a page of this destination reads: the loader's page size, or
 * its kind's batch when larger (a lake writes a file per page: larger pages
 * make fewer, larger files), up to maxPageSize.
 */
function pageSizeOf(context: CursorRunContext, destination: AnyDestination | undefined): number {
  const batch = destination ? (context.runtime.batchWindow(destination)?.calls ?? 0) : 0;
  return Math.max(context.pageSize, Math.min(batch, maxPageSize));
}

/** What routing and sending a page needs: the destination's rules now, and the users waiting behind an exception. */
async function pageContextOf(
  context: CursorRunContext,
  page: LogPage,
  settings: { destination: AnyDestination; rules: RouteRules },
  earlier: ReadonlyMap<string, CallAttempts>,
): Promise<PageContext> {
  const { destination, rules } = settings;
  // Ordering keys, as the exception rows carry them (an anonymous caller's too).
  const keys = destination.ordering === "per_user" ? page.calls.map((call) => orderingKeyOf(call)) : [];
  const users = [...new Set(keys.filter((key): key is string => key !== null))];
  const waitingUsers = users.length > 0 ? await selectWaitingUsers(context.pool, destination.id, users) : new Set<string>();
  // A destination that takes calls as stored (an archive) is neither routed nor shaped.
  const asStored = takesCallsAsStored(destination);
  const shapes = !asStored && (destination.drop_fields.length > 0 || destination.transform !== "" || destination.add_profile_id);
  // The page's bodies with context.profileId, looked up in one statement before any is shaped.
  const profiled =
    shapes && destination.add_profile_id
      ? await profiledBodies(
          context.pool,
          page.calls.map((call) => call.payload),
        )
      : undefined;
  const bodyRules = {
    dropFields: destination.drop_fields,
    transform: destination.transform,
    sandboxKey: sandboxKey(destination.id, destination.revision),
  };
  return {
    destination,
    rules,
    asStored,
    rule: completionOf(destination),
    retry: context.config.retry,
    now: () => context.clock.now(),
    waitingUsers,
    earlier,
    shape: shapes
      ? (payload) => shapeBody(profiled?.get(payload) ?? payload, bodyRules, context.sandboxes, { mayDefer: false })
      : undefined,
    deliver: (job, d, body) => context.runtime.deliver(job, d, body),
    flush: () => context.runtime.flush(),
  };
}

/** The page's record and its health in one transaction; false when the lease was lost (nothing written). */
async function recordPage(context: CursorRunContext, advance: LogAdvance, outcome: PageOutcome): Promise<boolean> {
  const { moved, queued, announce } = await withTransaction(context.pool, async (tx) => {
    const result = await advanceLogCursor(tx, advance);
    if (!result.moved) return { ...result, announce: () => {} };
    return { ...result, announce: await context.recordHealth(tx, outcome.completions) };
  });
  if (!moved) return false;
  announce();
  if (queued) context.onQueued();
  context.onCompleted(outcome.completions);
  return true;
}

async function holdCursor(
  context: CursorRunContext,
  cursor: LogCursor,
  token: string,
  outcome: Extract<PageOutcome, { kind: "hold" }>,
  /** The try's operations, added to the cursor's held attempts. */
  held: HeldAttempt[],
  destinationId: string,
): Promise<void> {
  const announce = await withTransaction(context.pool, async (tx) => {
    await recordHeldBatch(tx, destinationId, outcome.rows, outcome.sentBodies);
    const at = context.clock.now();
    if (!(await holdLogCursor(tx, cursor, token, { at, runAt: outcome.runAt, error: outcome.error, held }))) return undefined;
    return context.recordHealth(tx, outcome.completions);
  });
  if (!announce) return;
  announce();
  context.onCompleted(outcome.completions);
  context.logger.info({ destinationId, error: outcome.error }, "a call log batch failed as a whole; its cursor waits for the retry");
}

/** Each body as stored, and the body with context.profileId (addProfileId) that is shaped in its place. */
async function profiledBodies(pool: Queryable, payloads: string[]): Promise<Map<string, string>> {
  const profiled = await withProfileIds(pool, payloads);
  return new Map(payloads.map((payload, i) => [payload, profiled[i]!]));
}
