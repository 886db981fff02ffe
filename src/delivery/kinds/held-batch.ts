import type { Clock } from "../../clock.js";

/** When a held batch goes: at the first bound it reaches. */
export interface BatchLimits {
  /** A batch this many calls long goes at once. */
  maxCalls: number;
  /**
   * A batch whose body reaches this many bytes (framing included) goes at
   * once, and a call that would take it past goes in the next one (a call
   * larger alone goes in a batch of one); undefined: no bound on bytes.
   */
  maxBytes?: number | undefined;
  /** The first call waits this long for more, no longer. */
  maxWaitMs: number;
}

/** A call waiting in a batch: what the kind keeps of it, and how it learns its outcome. */
export interface HeldCall<Item, Result> {
  item: Item;
  resolve(result: Result): void;
}

export interface HeldBatchesOptions<Item, Context, Result> {
  clock: Clock;
  /**
   * Sends a batch that is due: its calls in the order they came, with the
   * context it was opened with. It must resolve every call (a failure is
   * an outcome too); `close` waits for the promise.
   */
  send(context: Context, calls: Array<HeldCall<Item, Result>>): Promise<void>;
  /** Whether a batch opened with `held` takes a call given `given` (identity by default); when not, what waits goes first. */
  sameContext?(held: Context, given: Context): boolean;
  /** Bytes a body has around its calls (`{"batch":[` and `]}`) and between two of them, for `maxBytes`. */
  framing?: { around: number; between: number } | undefined;
}

/**
 * Calls held per key (a destination, a URL of it, a subscription of it)
 * until their batch is due: full by count or bytes, or `maxWaitMs` after
 * its first call, by the injectable clock on the loop's tick (a timer backs
 * it in real time); every batch on flush and close. A call of another
 * context (its destination's settings moved on) sends what waits first:
 * a batch goes with the settings its calls came with.
 */
export interface HeldBatches<Item, Context, Result> {
  /** Adds a call to its key's batch (opened with `context` and `limits` when there is none); resolves with its outcome. */
  add(key: string, context: Context, limits: BatchLimits, item: Item, bytes?: number): Promise<Result>;
  /** Sends the key's batch now if it was opened with `context` (its target is closing). */
  release(key: string, context: Context): void;
  /** Whether a batch waits under `key`. */
  holds(key: string): boolean;
  /** Sends the batches whose first call has waited their `maxWaitMs`. */
  tick(): void;
  /** Sends every batch now. */
  flush(): void;
  /** Sends every batch and waits until every batch sent has settled. */
  close(): Promise<void>;
}

interface Batch<Item, Context, Result> {
  key: string;
  context: Context;
  limits: BatchLimits;
  calls: Array<HeldCall<Item, Result>>;
  /** The body's size so far, framing included. */
  bytes: number;
  /** When the first call came (clock ms). */
  firstAt: number;
  timer: NodeJS.Timeout;
}

export function createHeldBatches<Item, Context, Result>(
  options: HeldBatchesOptions<Item, Context, Result>,
): HeldBatches<Item, Context, Result> {
  const { clock } = options;
  const same = options.sameContext ?? ((held: Context, given: Context) => held === given);
  const framing = options.framing ?? { around: 0, between: 0 };
  const batches = new Map<string, Batch<Item, Context, Result>>();
  const sending = new Set<Promise<void>>();

  const waited = (batch: Batch<Item, Context, Result>) => clock.now().getTime() - batch.firstAt >= batch.limits.maxWaitMs;

  function send(batch: Batch<Item, Context, Result>) {
    if (batches.get(batch.key) === batch) batches.delete(batch.key);
    clearTimeout(batch.timer);
    const work = options.send(batch.context, batch.calls);
    sending.add(work);
    void work.finally(() => sending.delete(work));
  }

  function open(key: string, context: Context, limits: BatchLimits): Batch<Item, Context, Result> {
    const batch: Batch<Item, Context, Result> = {
      key,
      context,
      limits,
      calls: [],
      bytes: framing.around,
      firstAt: clock.now().getTime(),
      timer: setTimeout(() => {
        if (batches.get(key) === batch && waited(batch)) send(batch);
      }, limits.maxWaitMs),
    };
    batch.timer.unref();
    batches.set(key, batch);
    return batch;
  }

  /** Whether one more call of `bytes` would take the batch past its bound. */
  const overflows = (batch: Batch<Item, Context, Result>, bytes: number) =>
    batch.limits.maxBytes !== undefined && batch.bytes + framing.between + bytes > batch.limits.maxBytes;

  return {
    add(key, context, limits, item, bytes = 0) {
      const held = batches.get(key);
      if (held && (!same(held.context, context) || overflows(held, bytes))) send(held);
      const batch = batches.get(key) ?? open(key, context, limits);
      const result = new Promise<Result>((resolve) => batch.calls.push({ item, resolve }));
      batch.bytes += bytes + (batch.calls.length > 1 ? framing.between : 0);
      const { maxCalls, maxBytes } = batch.limits;
      // Full, or too large for any other call to join (a call larger than maxBytes alone).
      if (batch.calls.length >= maxCalls || (maxBytes !== undefined && batch.bytes >= maxBytes)) send(batch);
      return result;
    },
    release(key, context) {
      const batch = batches.get(key);
      if (batch && same(batch.context, context)) send(batch);
    },
    holds: (key) => batches.has(key),
    tick() {
      for (const batch of [...batches.values()]) if (waited(batch)) send(batch);
    },
    flush() {
      for (const batch of [...batches.values()]) send(batch);
    },
    async close() {
      for (const batch of [...batches.values()]) send(batch);
      await Promise.allSettled([...sending]);
    },
  };
}
