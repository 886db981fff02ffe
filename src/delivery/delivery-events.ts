import type { DeliveryCompletion } from "../db/job-table/index.js";
import type { Logger } from "../logger.js";

/** What the delivery loop reports, and the value each report carries. */
export interface DeliveryEventValues {
  /** Results written, after each batch commits. */
  completed: readonly DeliveryCompletion[];
  /** Results not written: the delivery's lease had moved on (cancelled, replayed, taken over). */
  stale: readonly DeliveryCompletion[];
  /** Deliveries dropped unsent, or found in flight, after their lease moved on. */
  lost: readonly string[];
  /** After each claim: how many it took, and performance.now() when it began. */
  claimed: { count: number; startedAt: number };
}

export type DeliveryEventName = keyof DeliveryEventValues;
export type DeliveryEventListener<K extends DeliveryEventName> = (value: DeliveryEventValues[K]) => void;

/** The loop's reports, typed: subscribe with `on` or `once`; each returns its unsubscribe. */
export interface DeliveryEvents {
  on<K extends DeliveryEventName>(name: K, listener: DeliveryEventListener<K>): () => void;
  once<K extends DeliveryEventName>(name: K, listener: DeliveryEventListener<K>): () => void;
}

/** The loop's side: it also reports. */
export interface DeliveryEventEmitter extends DeliveryEvents {
  emit<K extends DeliveryEventName>(name: K, value: DeliveryEventValues[K]): void;
}

/**
 * Typed events in place of an EventEmitter: a listener's mistakes (a typo in
 * an event name, the wrong payload) are compile errors, and a listener that
 * throws is logged rather than thrown into the delivery loop that reported.
 */
export function createDeliveryEvents(logger: Pick<Logger, "error">): DeliveryEventEmitter {
  const listeners = new Map<DeliveryEventName, Set<(value: never) => void>>();
  const on = <K extends DeliveryEventName>(name: K, listener: DeliveryEventListener<K>) => {
    let set = listeners.get(name);
    if (!set) listeners.set(name, (set = new Set()));
    set.add(listener as (value: never) => void);
    return () => void set.delete(listener as (value: never) => void);
  };
  return {
    on,
    once(name, listener) {
      const off = on(name, (value) => {
        off();
        listener(value);
      });
      return off;
    },
    emit(name, value) {
      for (const listener of [...(listeners.get(name) ?? [])]) {
        try {
          (listener as DeliveryEventListener<typeof name>)(value);
        } catch (error) {
          logger.error({ err: error, event: name }, "a delivery event listener failed");
        }
      }
    },
  };
}
