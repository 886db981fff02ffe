import { randomUUID } from "node:crypto";
import type { Dispatcher } from "undici";
import type { Clock } from "../clock.js";
import type { OperatorWebhookConfig } from "../config.js";
import type { AddressGuard } from "../outbound/address-guard.js";
import { sendWebhook } from "../outbound/send.js";
import { userAgent } from "../outbound/user-agent.js";
import type { Logger } from "../logger.js";
import { signingKey, standardWebhookHeaders } from "../signing/standard-webhooks.js";

export type OperatorEventType = "destination.circuit_opened" | "destination.circuit_closed" | "destination.deliveries_expired";

export interface OperatorEventsOptions {
  /** Unset: events are only logged. */
  webhook: OperatorWebhookConfig | undefined;
  /** The guarded client ordinary webhooks go through. */
  dispatcher: Dispatcher;
  guard: AddressGuard;
  timeoutMs: number;
  clock: Clock;
  logger: Logger;
  /** Waits before each retry of a failed send (default 1 s, 4 s, 16 s, 64 s). */
  retryDelaysMs?: readonly number[];
}

export interface OperatorEvents {
  /** Logs the event at warn and sends it (in the background, retrying). */
  emit(type: OperatorEventType, data: Record<string, unknown>): void;
  /** Resolves when every event emitted so far was sent or given up. */
  flush(): Promise<void>;
  /** Stops retrying; events still waiting for a retry are logged as lost. */
  stop(): Promise<void>;
}

const messages: Record<OperatorEventType, string> = {
  "destination.circuit_opened": "destination circuit opened: its deliveries are held back except for probes",
  "destination.circuit_closed": "destination circuit closed: its endpoint answers again, deliveries resume",
  "destination.deliveries_expired": "destination deliveries expired: they reached their deadline undelivered",
};

/**
 * Operator events: a warn log line each, and, when configured, a JSON POST
 * signed the Standard Webhooks way. Sending happens in this process, with a
 * few retries: an event is not stored, so one that still fails after the
 * retries (or is pending when the process stops) is lost, and logged so.
 * The log line is the durable record.
 */
export function createOperatorEvents(options: OperatorEventsOptions): OperatorEvents {
  const { webhook, clock, logger } = options;
  const delays = options.retryDelaysMs ?? [1_000, 4_000, 16_000, 64_000];
  const key = webhook ? signingKey(webhook.secret) : undefined;
  const target = webhook ? new URL(webhook.url) : undefined;
  const pending = new Set<Promise<void>>();
  const timers = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  let stopped = false;

  function wait(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const entry = {
        timer: setTimeout(() => {
          timers.delete(entry);
          resolve(true);
        }, ms),
        resolve: () => resolve(false),
      };
      timers.add(entry);
    });
  }

  async function send(id: string, type: OperatorEventType, body: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const headers = {
        "user-agent": userAgent,
        "content-type": "application/json",
        ...standardWebhookHeaders([key!], id, clock.now(), body),
      };
      const result = await sendWebhook(
        { urlIndex: 0, url: webhook!.url, target: target!, headers, body },
        { dispatcher: options.dispatcher, guard: options.guard, timeoutMs: options.timeoutMs, now: () => clock.now() },
      );
      if (result.outcome === "success") return;
      const reason = result.error ?? `HTTP ${result.statusCode}`;
      const delay = delays[attempt];
      if (result.outcome !== "retryable" || delay === undefined || stopped || !(await wait(delay))) {
        logger.error({ event: type, eventId: id, reason }, "operator event could not be delivered; it is lost (see the warn log line)");
        return;
      }
    }
  }

  return {
    emit(type, data) {
      const id = `evt_${randomUUID()}`;
      logger.warn({ event: type, eventId: id, ...data }, messages[type]);
      if (!webhook || stopped) return;
      const body = JSON.stringify({ type, timestamp: clock.now().toISOString(), data });
      const work = send(id, type, body)
        .catch((error) => logger.error({ err: error, event: type }, "sending an operator event failed"))
        .finally(() => pending.delete(work));
      pending.add(work);
    },
    async flush() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
    async stop() {
      stopped = true;
      for (const entry of timers) {
        clearTimeout(entry.timer);
        entry.resolve();
      }
      timers.clear();
      await Promise.allSettled([...pending]);
    },
  };
}
