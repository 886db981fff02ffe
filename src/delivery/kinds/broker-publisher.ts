import type { Logger } from "../../logger.js";
import type { AddressGuard } from "../../outbound/address-guard.js";

/** One call to publish to a broker: the body a webhook would get, and what names and routes it. */
export interface BrokerCall {
  /** The message's id, the same on every attempt: a consumer (or JetStream) drops duplicates by it. */
  messageId: string;
  /** The call type (track, identify, ...). */
  type: string;
  /** The track call's event name; empty or absent for other types. */
  event?: string | undefined;
  sourceId: string;
  destinationId: string;
  /** The JSON body after the destination's rules, sent byte for byte. */
  body: string;
  /** When the call happened (the message's timestamp property). */
  timestamp: Date;
  /** The W3C trace context stored with the call, sent on every attempt. */
  traceparent?: string | null | undefined;
  tracestate?: string | null | undefined;
}

/** What a publisher is made with besides its kind's settings. */
export interface PublisherContext {
  /** The SSRF check, on every address the broker is dialled at (literal or resolved), before any socket opens. */
  guard: AddressGuard;
  /** Time to connect, and for the broker to confirm or acknowledge each message. */
  timeoutMs: number;
  logger?: Logger | undefined;
  /** Shown by the broker for the connection (its management UI, monitoring endpoints), e.g. the destination id. */
  connectionName?: string | undefined;
}

/** An attempt's outcome, as the delivery loop records attempts. */
export interface PublishResult {
  outcome: "success" | "retryable" | "permanent";
  /** Why it failed, naming the cause (never a credential). */
  error?: string | undefined;
}

/**
 * A destination's open target at one settings revision: one connection,
 * opened on the first publish, reopened after the broker drops it, closed
 * when the revision changes, the destination goes or the process stops.
 * `publish` never rejects.
 */
export interface BrokerPublisher {
  publish(call: BrokerCall): Promise<PublishResult>;
  /**
   * Publishes the calls together (written in one go, their confirms awaited
   * together): one result per call, in order; a failure of one message
   * fails only that call. Never rejects.
   */
  publishRound(calls: readonly BrokerCall[]): Promise<PublishResult[]>;
  /** Waits for the publishes in flight to settle, then closes the connection. */
  close(): Promise<void>;
}

/**
 * The confirms one publish round awaits: each call's entry settles once
 * (its confirm or acknowledgement, a failure, or the round's timer), and
 * the round resolves with every call's result once all have. Entries are
 * added as their calls are published; `published()` says the last one
 * was, so a call failing at once cannot end the round early.
 */
export function awaitConfirms<E>(results: PublishResult[], timeoutMs: number, onTimeout: (waiting: E[]) => void) {
  const waiting = new Set<E>();
  // One more than the entries added, until every call is published.
  let left = 1;
  let resolve: (value: PublishResult[]) => void = () => {};
  const settled = new Promise<PublishResult[]>((r) => (resolve = r));
  const done = () => {
    if (--left > 0) return;
    clearTimeout(timer);
    resolve(results);
  };
  const timer = setTimeout(() => onTimeout([...waiting]), timeoutMs);
  return {
    /** `entry` awaits its confirm. */
    add(entry: E) {
      waiting.add(entry);
      left++;
    },
    /** Whether `entry` still awaits. */
    awaits: (entry: E) => waiting.has(entry),
    /** Records `entry`'s result as call `i`'s; false, recording nothing, when it had already settled. */
    settle(entry: E, i: number, result: PublishResult): boolean {
      if (!waiting.delete(entry)) return false;
      results[i] = result;
      done();
      return true;
    },
    /** Every call is published: resolves with the results once each has settled. */
    published(): Promise<PublishResult[]> {
      done();
      return settled;
    },
  };
}

/** Resolves to the value, or rejects with `onTimeout()` after `ms`; `late` gets a value that came after. */
export function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error, late?: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      reject(onTimeout());
    }, ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        if (timedOut) late?.(value);
        else resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        if (!timedOut) reject(error);
      },
    );
  });
}

/** An error's message on one line, bounded (clients put whole frames in some). */
export function causeOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const line = message.replace(/\s+/g, " ").trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line || "unknown error";
}
