// What start-up opened, closed on stop: one list per service, unwound
// newest first, so that a failing start and a stop leave nothing behind.

/** Something opened during start-up, closed on stop in reverse order of opening. */
export type Closer = () => Promise<void>;

/** Runs the closers newest first; every one runs even if an earlier one fails (the first failure is thrown after). */
export async function closeAll(closers: Closer[]): Promise<void> {
  let failure: unknown;
  while (closers.length > 0) {
    try {
      await closers.pop()!();
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure !== undefined) throw failure;
}
