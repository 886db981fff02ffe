import type { CallAttempts, LogAttemptRow } from "../../db/call-log/log-advance.js";
import type { HeldAttempt } from "../../db/call-log/log-cursors.js";

// A call read from the log has no delivery row to hold its attempts, yet
// users see them as a delivery per call lists them: every operation that
// carried it (a batch refused as too large, then the half that took it;
// each URL's POST), numbered by the try it was part of, earlier tries (the
// page failed as a whole, the cursor held) first. The page's record
// writes them where the call's delivery is read from: its run's
// log_batches row, or its exception row.

/** No attempts yet. */
export const noAttempts: CallAttempts = { rows: [], numbers: [], firstAt: null, tries: 0 };

/**
 * The earlier tries of the calls of the cursor's head page, by message pk,
 * from the cursor's held attempts (in the order made). Each call numbers
 * the tries it was part of 1, 2, ... in order.
 */
export function earlierTries(held: readonly HeldAttempt[]): Map<string, CallAttempts> {
  const byCall = new Map<string, HeldAttempt[]>();
  for (const attempt of held) {
    for (const pk of attempt.pks) {
      const list = byCall.get(pk);
      if (list) list.push(attempt);
      else byCall.set(pk, [attempt]);
    }
  }
  const tries = new Map<string, CallAttempts>();
  for (const [pk, attempts] of byCall) {
    const numbers: number[] = [];
    let tryNumber = 0;
    let lastN: number | undefined;
    for (const attempt of attempts) {
      if (attempt.n !== lastN) tryNumber++;
      lastN = attempt.n;
      numbers.push(tryNumber);
    }
    const firstAt = new Date(Math.min(...attempts.map((a) => Date.parse(a.at))));
    tries.set(pk, { rows: attempts.map((a) => a.row), numbers, firstAt, tries: tryNumber });
  }
  return tries;
}

/** A call's attempts after this try: its earlier ones, then this try's operations, in the order made, as try `tries + 1`. */
export function withThisTry(earlier: CallAttempts | undefined, rows: readonly LogAttemptRow[]): CallAttempts {
  const before = earlier ?? noAttempts;
  if (rows.length === 0) return before;
  const tryNumber = before.tries + 1;
  const firstOfTry = Math.min(...rows.map((r) => r.attemptedAt.getTime()));
  return {
    rows: [...before.rows, ...rows.map((r) => r.id)],
    numbers: [...before.numbers, ...rows.map(() => tryNumber)],
    firstAt: before.firstAt ?? new Date(firstOfTry),
    tries: tryNumber,
  };
}

/** Whether the attempts are one operation, attempt 1 (a run's delivering row says it all: no references stored). */
export function isSingle(attempts: CallAttempts): boolean {
  return attempts.rows.length === 1 && attempts.tries === 1;
}

/** The key runs of a page are cut by: calls whose attempts differ are in different runs. */
export function attemptsKey(attempts: CallAttempts): string {
  return attempts.rows.map((row, i) => `${row}/${attempts.numbers[i]}`).join(",");
}

/**
 * The held attempts a try of the head page that failed as a whole adds:
 * its operations (the page's rows, in the order made), numbered after the
 * tries already held.
 */
export function heldAttemptsOf(held: readonly HeldAttempt[], rows: readonly LogAttemptRow[]): HeldAttempt[] {
  const n = Math.max(0, ...held.map((a) => a.n)) + 1;
  return rows.map((r) => ({ row: r.id, at: r.attemptedAt.toISOString(), n, pks: r.pks }));
}

/** The held attempts that stay once a page is recorded: those of calls it did not hold (null: none). */
export function heldAfter(held: readonly HeldAttempt[], recorded: ReadonlySet<string>): HeldAttempt[] | null {
  const left = held.flatMap((a) => {
    const pks = a.pks.filter((pk) => !recorded.has(pk));
    return pks.length === 0 ? [] : [{ ...a, pks }];
  });
  return left.length === 0 ? null : left;
}
