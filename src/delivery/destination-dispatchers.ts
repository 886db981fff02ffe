import type { Dispatcher } from "undici";
import type { OutboundConfig } from "../config.js";
import type { AddressGuard } from "../outbound/address-guard.js";
import { createHttpClient } from "../outbound/http-client.js";

export interface DestinationDispatchersOptions {
  guard: AddressGuard;
  /** The endpoint's whole answer must arrive within this. */
  timeoutMs: number;
  /** Extra trusted CA certificates (PEM), beside the system roots. */
  ca?: string | string[] | undefined;
  /** Proxies, NO_PROXY and NODE_EXTRA_CA_CERTS (config.outbound); absent: direct. */
  outbound?: OutboundConfig | undefined;
  /** Requests queued on one connection (1: none). */
  pipelining: number;
  /** Keep-alive connections per origin, for each destination. */
  connectionsPerOrigin: number;
  /** A destination with nothing in flight and no request for this long loses its dispatcher (default 5 minutes). */
  idleMs?: number;
  /** Time source (ms) for idleness; the loop passes its clock. */
  now?: () => number;
}

export interface DestinationDispatchers {
  /** Runs `send` with the destination's own dispatcher (created on first use); it is not closed while `send` runs. */
  use<T>(destinationId: string, send: (dispatcher: Dispatcher) => Promise<T>): Promise<T>;
  /** Closes and drops the dispatchers idle for `idleMs`; returns how many. Also runs on a timer. */
  sweep(): number;
  /** Destinations holding a dispatcher now. */
  readonly size: number;
  /**
   * Closes every dispatcher: waits for the requests in flight for up to
   * `graceMs`, then aborts what is left. Later `use` calls fail.
   */
  close(graceMs?: number): Promise<void>;
}

interface Entry {
  agent: Dispatcher;
  inFlight: number;
  lastUsed: number;
}

/**
 * One HTTP client (outbound/http-client.ts: direct or through the
 * configured proxy) per destination; every kind that sends HTTP (webhooks,
 * integrations) gets its destination's through `DeliveryContext.http`.
 * With pipelining on, undici queues a POST on a connection whose running
 * request has its answer's headers, and writes it once that body is read; an endpoint that stalls its body holds
 * the request queued behind it until the timeout. Keeping every destination
 * on connections of its own confines that to the destination whose endpoint
 * stalls, even when two destinations share a host.
 */
export function createDestinationDispatchers(options: DestinationDispatchersOptions): DestinationDispatchers {
  const idleMs = options.idleMs ?? 5 * 60_000;
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  let closed = false;
  // Idle Agents hold no sockets for long (keep-alive ends after 30 s); the
  // sweep bounds how many Agent objects a process keeps for destinations it
  // no longer sends to.
  const timer = setInterval(() => sweep(), Math.min(idleMs, 60_000));
  timer.unref();

  function entryOf(destinationId: string): Entry {
    let entry = entries.get(destinationId);
    if (!entry) {
      const agent = createHttpClient({
        guard: options.guard,
        timeoutMs: options.timeoutMs,
        ca: options.ca,
        outbound: options.outbound,
        pipelining: options.pipelining,
        connectionsPerOrigin: options.connectionsPerOrigin,
      });
      entries.set(destinationId, (entry = { agent, inFlight: 0, lastUsed: now() }));
    }
    return entry;
  }

  function sweep(): number {
    const cutoff = now() - idleMs;
    let swept = 0;
    for (const [id, entry] of entries) {
      if (entry.inFlight > 0 || entry.lastUsed > cutoff) continue;
      entries.delete(id);
      swept++;
      // Nothing is in flight on it: close() only ends its idle sockets.
      entry.agent.close().catch(() => {});
    }
    return swept;
  }

  return {
    async use(destinationId, send) {
      if (closed) throw new Error("the delivery dispatchers are closed");
      const entry = entryOf(destinationId);
      entry.inFlight++;
      try {
        return await send(entry.agent);
      } finally {
        entry.inFlight--;
        entry.lastUsed = now();
      }
    },
    sweep,
    get size() {
      return entries.size;
    },
    async close(graceMs = Infinity) {
      closed = true;
      clearInterval(timer);
      const agents = [...entries.values()].map((e) => e.agent);
      entries.clear();
      const closing = Promise.allSettled(agents.map((agent) => agent.close()));
      if (graceMs === Infinity) {
        await closing;
        return;
      }
      let graceTimer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        closing.then(() => false),
        new Promise<boolean>((resolve) => (graceTimer = setTimeout(() => resolve(true), graceMs))),
      ]);
      clearTimeout(graceTimer);
      if (timedOut) await Promise.allSettled(agents.map((agent) => agent.destroy()));
    },
  };
}
