import type { Notifier } from "../background/notifier.js";
import { deliveriesChannel } from "../db/job-table/index.js";

export interface Wakeup {
  /** Subscribes to the deliveries' channel; resolves once it is listened on (or the connection failed: then it polls). */
  listen(): Promise<void>;
  /** Resolves on a NOTIFY, a poke, freed capacity, or after timeoutMs. */
  wait(timeoutMs: number): Promise<void>;
  wake(): void;
  close(): void;
}

/**
 * Wakes the delivery loop: a NOTIFY on the deliveries' channel through the
 * process's notifier (new deliveries were committed; and after the notifier
 * reconnects, for those announced while it was away), finished work (slots
 * free), or the poll timer as the fallback that also picks up retries
 * coming due. Without a notifier it polls.
 */
export function createWakeup(notifier: Notifier | undefined): Wakeup {
  let resolveWait: (() => void) | undefined;
  let pending = false;
  const unsubscribe: Array<() => void> = [];

  function wake() {
    if (resolveWait) {
      const resolve = resolveWait;
      resolveWait = undefined;
      resolve();
    } else {
      pending = true;
    }
  }

  return {
    async listen() {
      if (!notifier) return;
      unsubscribe.push(notifier.subscribe(deliveriesChannel, wake), notifier.onReady(wake));
      await notifier.settled();
    },
    wake,
    wait(timeoutMs) {
      if (pending) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const timer = setTimeout(wake, timeoutMs);
        resolveWait = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    },
    close() {
      for (const off of unsubscribe.splice(0)) off();
    },
  };
}
