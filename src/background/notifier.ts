import pg from "pg";
import type { Logger } from "../logger.js";

export interface NotifierOptions {
  /** For the LISTEN connection, which must not come from a pool (a pooled connection is shared and recycled). */
  connectionString: string;
  logger: Pick<Logger, "warn">;
  /** The connection's application_name, as pg_stat_activity shows it. */
  applicationName?: string;
  /** The first wait before connecting again (1 s by default); it doubles with each failure in a row... */
  initialBackoffMs?: number;
  /** ...up to this (30 s by default), and starts over after a connection succeeds. */
  maxBackoffMs?: number;
  /** Jitter in [0, 1): a wait is shortened by up to a quarter, so processes cut off together do not all come back at once. */
  random?: () => number;
  /** Runs `reconnect` after `ms`, returning its cancel (tests record the waits and run it at once). */
  schedule?: (reconnect: () => void, ms: number) => () => void;
}

export interface Notifier {
  /**
   * Calls `onNotify` with the payload of every NOTIFY on `topic` (a
   * Postgres channel) from now on; LISTEN is issued on the first
   * subscription to a topic, and again after every reconnect.
   */
  subscribe(topic: string, onNotify: (payload: string) => void): () => void;
  /**
   * Calls `onReady` after every (re)connect, once every topic is listened
   * on again: a NOTIFY sent while the connection was down is lost, so a
   * subscriber looks for what it may have missed.
   */
  onReady(onReady: () => void): () => void;
  /** Resolves once the topics subscribed so far are listened on, or the attempt to connect failed (a reconnect is then scheduled). */
  settled(): Promise<void>;
  close(): Promise<void>;
}

/**
 * One LISTEN connection per process, shared by every topic (the delivery
 * loop's wake-ups, webhook sources' requests), as River's notifier is. It
 * connects at the first subscription; a connection that fails is made again
 * after an exponential back-off with jitter, 1 s to 30 s, and every
 * subscriber is told when it is back. A notification is only a hint:
 * subscribers also poll, so one lost while the connection is down delays
 * work and loses none.
 */
export function createNotifier(options: NotifierOptions): Notifier {
  const initialMs = options.initialBackoffMs ?? 1_000;
  const maxMs = options.maxBackoffMs ?? 30_000;
  const random = options.random ?? Math.random;
  const schedule = options.schedule ?? scheduleUnref;
  const subscribers = new Map<string, Set<(payload: string) => void>>();
  const readyCallbacks = new Set<() => void>();
  /** The live connection and the topics it listens on. */
  let client: pg.Client | undefined;
  let listened = new Set<string>();
  let started = false;
  let closed = false;
  /** Failed connections in a row: the next wait's exponent. */
  let failures = 0;
  let cancelReconnect: (() => void) | undefined;
  // Connecting, LISTEN and UNLISTEN run one at a time, in order: a topic
  // subscribed while connecting is listened on right after.
  let steps: Promise<void> = Promise.resolve();

  function enqueue(step: () => Promise<void>): void {
    steps = steps.then(step).catch((error: unknown) => options.logger.warn({ err: error }, "the LISTEN connection's step failed"));
  }

  async function connect(): Promise<void> {
    if (closed || client) return;
    const next = new pg.Client({
      connectionString: options.connectionString,
      application_name: options.applicationName ?? "waypost-listen",
      keepAlive: true,
    });
    let lost = false;
    const lose = (error: unknown, what: string) => {
      if (lost) return;
      lost = true;
      if (client === next) client = undefined;
      next.end().catch(() => {});
      if (closed) return;
      options.logger.warn({ err: error }, `${what}; its subscribers poll until it is back`);
      reconnectLater();
    };
    next.on("notification", (message) => {
      if (!lost) deliver(message.channel, message.payload ?? "");
    });
    next.on("error", (error) => lose(error, "the LISTEN connection failed"));
    next.on("end", () => lose(new Error("the connection ended"), "the LISTEN connection was closed"));
    const topics = [...subscribers.keys()];
    try {
      await next.connect();
      if (topics.length > 0) await next.query(topics.map((topic) => `LISTEN ${next.escapeIdentifier(topic)}`).join("; "));
    } catch (error) {
      lose(error, "connecting to LISTEN failed");
      return;
    }
    if (lost) return;
    if (closed) {
      lost = true;
      await next.end().catch(() => {});
      return;
    }
    client = next;
    listened = new Set(topics);
    failures = 0;
    for (const ready of [...readyCallbacks]) ready();
  }

  function reconnectLater(): void {
    if (closed || cancelReconnect) return;
    const base = Math.min(maxMs, initialMs * 2 ** failures);
    failures++;
    const wait = Math.round(base * (1 - random() / 4));
    cancelReconnect = schedule(() => {
      cancelReconnect = undefined;
      enqueue(connect);
    }, wait);
  }

  /** LISTEN on topics subscribed since the connection was made, UNLISTEN those nobody wants any more. */
  async function sync(): Promise<void> {
    const live = client;
    if (!live) return;
    const added = [...subscribers.keys()].filter((topic) => !listened.has(topic));
    const dropped = [...listened].filter((topic) => !subscribers.has(topic));
    const statements = [
      ...added.map((topic) => `LISTEN ${live.escapeIdentifier(topic)}`),
      ...dropped.map((topic) => `UNLISTEN ${live.escapeIdentifier(topic)}`),
    ];
    if (statements.length === 0) return;
    await live.query(statements.join("; "));
    if (client !== live) return;
    for (const topic of added) listened.add(topic);
    for (const topic of dropped) listened.delete(topic);
  }

  function deliver(topic: string, payload: string): void {
    for (const onNotify of [...(subscribers.get(topic) ?? [])]) {
      try {
        onNotify(payload);
      } catch (error) {
        options.logger.warn({ err: error, topic }, "a notification's subscriber failed");
      }
    }
  }

  return {
    subscribe(topic, onNotify) {
      let topicSubscribers = subscribers.get(topic);
      if (!topicSubscribers) subscribers.set(topic, (topicSubscribers = new Set()));
      const own = topicSubscribers;
      own.add(onNotify);
      if (!closed) enqueue(started ? sync : connect);
      started = true;
      return () => {
        own.delete(onNotify);
        if (own.size > 0 || subscribers.get(topic) !== own) return;
        subscribers.delete(topic);
        if (!closed) enqueue(sync);
      };
    },
    onReady(onReady) {
      readyCallbacks.add(onReady);
      return () => readyCallbacks.delete(onReady);
    },
    settled: () => steps,
    async close() {
      closed = true;
      cancelReconnect?.();
      cancelReconnect = undefined;
      await steps;
      const live = client;
      client = undefined;
      await live?.end().catch(() => {});
    },
  };
}

function scheduleUnref(reconnect: () => void, ms: number): () => void {
  const timer = setTimeout(reconnect, ms);
  timer.unref();
  return () => clearTimeout(timer);
}
