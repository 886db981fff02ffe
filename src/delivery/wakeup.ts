import pg from "pg";
import { deliveriesChannel } from "../db/job-table/index.js";
import type { Logger } from "../logger.js";

export interface WakeupOptions {
  connectionString: string;
  logger: Logger;
}

export interface Wakeup {
  /** Starts listening for NOTIFY; failures fall back to polling. */
  listen(): Promise<void>;
  /** Resolves on a NOTIFY, a poke, freed capacity, or after timeoutMs. */
  wait(timeoutMs: number): Promise<void>;
  wake(): void;
  close(): Promise<void>;
}

/**
 * Wakes the delivery loop: LISTEN on a dedicated connection (new deliveries
 * were committed), finished work (slots free), or the poll timer as the
 * fallback that also picks up retries coming due.
 */
export function createWakeup(options: WakeupOptions): Wakeup {
  let resolveWait: (() => void) | undefined;
  let pending = false;
  let client: pg.Client | undefined;
  let closed = false;
  let reconnectTimer: NodeJS.Timeout | undefined;

  function wake() {
    if (resolveWait) {
      const resolve = resolveWait;
      resolveWait = undefined;
      resolve();
    } else {
      pending = true;
    }
  }

  async function connect(): Promise<void> {
    const next = new pg.Client({ connectionString: options.connectionString, application_name: "waypost-listen" });
    next.on("notification", wake);
    next.on("error", (error) => {
      options.logger.warn({ err: error }, "LISTEN connection lost; polling until it is back");
      next.end().catch(() => {});
      scheduleReconnect();
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${deliveriesChannel}`);
      client = next;
      wake();
    } catch (error) {
      options.logger.warn({ err: error }, "LISTEN failed; polling until it works");
      next.end().catch(() => {});
      scheduleReconnect();
    }
  }

  function scheduleReconnect() {
    client = undefined;
    if (closed || reconnectTimer) return;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      void connect();
    }, 1_000);
  }

  return {
    listen: connect,
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
    async close() {
      closed = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      await client?.end().catch(() => {});
    },
  };
}
