import type { Clock } from "../../clock.js";

/** Anything a kind opens for a destination: a broker connection, a warehouse pool, an integration's runner. */
export interface Target {
  /** Finishes its work in flight, then releases what it holds. */
  close(): Promise<void>;
}

export interface TargetCacheOptions<Settings, T extends Target> {
  /** Makes the destination's target for a settings revision (it may open nothing until first used). */
  create(destinationId: string, settings: Settings, revision: number): T;
  clock: Clock;
  /** A target unused this long is closed by `sweep`; undefined: targets stay until replaced, dropped or closed. */
  idleMs?: number | undefined;
  /** A target still busy (calls held for it, work in flight) is not idle, however long since it was last asked for. */
  busy?(target: T): boolean;
}

/**
 * The open targets of one kind: one per destination, for the settings
 * revision it was made with. A delivery at a newer revision replaces it
 * (the old one closes, and its close waits for its work in flight), so a
 * changed URL or credential never reuses the old connection; a deleted
 * destination's and an idle one's close too.
 */
export interface TargetCache<Settings, T extends Target> {
  /** The destination's target at this revision; `settings` is read only when a new one is made. */
  get(destinationId: string, revision: number, settings: () => Settings): T;
  /** Closes the destination's target (deleted, disabled, or its kind changed). */
  drop(destinationId: string): Promise<void>;
  /** Closes the targets idle for `idleMs` or longer (call it on the loop's tick). */
  sweep(): Promise<void>;
  /**
   * Closes the targets of destinations missing from `current` (deleted) or
   * whose revision there moved past the target's: the kinds' `reconcile`.
   */
  reconcile(current: ReadonlyMap<string, { revision: number }>): void;
  /** Destinations with a target now. */
  size(): number;
  /** Their ids. */
  destinations(): string[];
  /** The settings revision the destination's target was made for; undefined: none open. */
  revisionOf(destinationId: string): number | undefined;
  /** Closes them all and waits for every close (on stop). */
  close(): Promise<void>;
}

interface Entry<T> {
  revision: number;
  target: T;
  lastUsedMs: number;
}

export function createTargetCache<Settings, T extends Target>(options: TargetCacheOptions<Settings, T>): TargetCache<Settings, T> {
  const entries = new Map<string, Entry<T>>();
  // Closes still running (a replaced target waits for its work in flight): `close` awaits them.
  const closing = new Set<Promise<void>>();

  const retire = (target: T): Promise<void> => {
    const done = target.close().catch(() => {});
    closing.add(done);
    void done.then(() => closing.delete(done));
    return done;
  };

  const drop = (destinationId: string): Promise<void> => {
    const entry = entries.get(destinationId);
    if (!entry) return Promise.resolve();
    entries.delete(destinationId);
    return retire(entry.target);
  };

  return {
    get(destinationId, revision, settings) {
      const now = options.clock.now().getTime();
      const entry = entries.get(destinationId);
      // A claim made before an update may still carry the older revision: never go back to it.
      if (entry && entry.revision >= revision) {
        entry.lastUsedMs = now;
        return entry.target;
      }
      if (entry) void retire(entry.target);
      const target = options.create(destinationId, settings(), revision);
      entries.set(destinationId, { revision, target, lastUsedMs: now });
      return target;
    },
    drop,
    async sweep() {
      if (options.idleMs === undefined) return;
      const cutoff = options.clock.now().getTime() - options.idleMs;
      const idle: Promise<void>[] = [];
      for (const [destinationId, entry] of entries) {
        if (entry.lastUsedMs > cutoff || options.busy?.(entry.target)) continue;
        idle.push(drop(destinationId));
      }
      await Promise.all(idle);
    },
    reconcile(current) {
      for (const [destinationId, entry] of entries) {
        const revision = current.get(destinationId)?.revision;
        if (revision === undefined || revision > entry.revision) void drop(destinationId);
      }
    },
    size: () => entries.size,
    destinations: () => [...entries.keys()],
    revisionOf: (destinationId) => entries.get(destinationId)?.revision,
    async close() {
      for (const entry of entries.values()) void retire(entry.target);
      entries.clear();
      await Promise.all(closing);
    },
  };
}
