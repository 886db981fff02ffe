import type { Clock } from "../../clock.js";
import type { BrokerPublisher } from "./broker-publisher.js";

export interface PublisherCacheOptions<Settings> {
  /** Opens nothing yet: a publisher connects on its first publish. */
  create(destinationId: string, settings: Settings): BrokerPublisher;
  clock: Clock;
  /** A publisher unused this long is closed by `sweep` (its connection with it). */
  idleMs: number;
}

/**
 * The open publishers of one broker kind: one per destination, for the
 * settings revision it was made with. A delivery at a newer revision
 * replaces it (the old one closes once its publishes in flight settle), so
 * a changed URL or credential never reuses the old connection; a deleted
 * destination's and an idle one's close too.
 */
export interface PublisherCache<Settings> {
  /** The destination's publisher at this revision; `settings` is read only when a new one is made. */
  get(destinationId: string, revision: number, settings: () => Settings): BrokerPublisher;
  /** Closes the destination's publisher (deleted, disabled, or its kind changed). */
  drop(destinationId: string): Promise<void>;
  /** Closes the publishers idle for `idleMs` or longer (call it on the loop's tick). */
  sweep(): Promise<void>;
  /** Destinations with a publisher now. */
  size(): number;
  /** Their ids. */
  destinations(): string[];
  /** The settings revision the destination's publisher was made for; undefined: none open. */
  revisionOf(destinationId: string): number | undefined;
  /** Closes them all (on stop). */
  close(): Promise<void>;
}

interface Entry {
  revision: number;
  publisher: BrokerPublisher;
  lastUsedMs: number;
}

export function createPublisherCache<Settings>(options: PublisherCacheOptions<Settings>): PublisherCache<Settings> {
  const entries = new Map<string, Entry>();
  // Closes still running (a replaced publisher waits for its publishes in flight): `close` awaits them.
  const closing = new Set<Promise<void>>();

  const retire = (publisher: BrokerPublisher): Promise<void> => {
    const done = publisher.close().catch(() => {});
    closing.add(done);
    void done.then(() => closing.delete(done));
    return done;
  };

  return {
    get(destinationId, revision, settings) {
      const now = options.clock.now().getTime();
      const entry = entries.get(destinationId);
      if (entry && entry.revision === revision) {
        entry.lastUsedMs = now;
        return entry.publisher;
      }
      // A claim made before an update may still carry the older revision: never go back to it.
      if (entry && entry.revision > revision) {
        entry.lastUsedMs = now;
        return entry.publisher;
      }
      if (entry) void retire(entry.publisher);
      const publisher = options.create(destinationId, settings());
      entries.set(destinationId, { revision, publisher, lastUsedMs: now });
      return publisher;
    },
    async drop(destinationId) {
      const entry = entries.get(destinationId);
      if (!entry) return;
      entries.delete(destinationId);
      await retire(entry.publisher);
    },
    async sweep() {
      const cutoff = options.clock.now().getTime() - options.idleMs;
      const idle: Promise<void>[] = [];
      for (const [destinationId, entry] of entries) {
        if (entry.lastUsedMs > cutoff) continue;
        entries.delete(destinationId);
        idle.push(retire(entry.publisher));
      }
      await Promise.all(idle);
    },
    size: () => entries.size,
    destinations: () => [...entries.keys()],
    revisionOf: (destinationId) => entries.get(destinationId)?.revision,
    async close() {
      for (const entry of entries.values()) void retire(entry.publisher);
      entries.clear();
      await Promise.all(closing);
    },
  };
}
