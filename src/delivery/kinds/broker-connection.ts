import { type BrokerCall, type BrokerPublisher, causeOf, type PublishResult } from "./broker-publisher.js";

/** An open connection as the shell sees it: why it ended, once it has. */
export interface BrokerLink {
  /** Set once the broker, the network or `close` ended it. */
  lost: string | undefined;
}

/** The open connection, or the failure every call of a round gets instead. */
export type Connected<C> = { connection: C; failure?: undefined } | { connection?: undefined; failure: PublishResult };

export interface BrokerConnectionOptions<C extends BrokerLink> {
  /**
   * Opens a connection (the address guard first). The broker's code calls
   * `onLost` when the broker or the network ends it: the next round then
   * opens a new one.
   */
  open(onLost: () => void): Promise<C>;
  /** Ends an open connection (on close). */
  end(connection: C): Promise<void>;
  /** A failed call naming its cause (the broker's prefix, secrets redacted). */
  fail(cause: string): PublishResult;
  /** Where it connects, as "cannot connect to …" names it. */
  where: string;
  /**
   * Publishes one round: `connect()` gives the open connection (opening it
   * if none is) or the failure of the round's calls. One result per call,
   * in order; a rejection fails every call naming it.
   */
  publishRound(calls: readonly BrokerCall[], connect: () => Promise<Connected<C>>): Promise<PublishResult[]>;
}

/**
 * A publisher over one lazily opened connection, the shell every broker
 * kind shares: the connection opens on the first round and is shared by
 * the rounds after it; a failed open is forgotten (the next round tries
 * again), as is a connection the broker drops. The rounds in flight are
 * counted, so `close` refuses new ones, waits for them to settle, then ends
 * the connection. No round ever rejects.
 */
export function createBrokerConnection<C extends BrokerLink>(options: BrokerConnectionOptions<C>): BrokerPublisher {
  let current: Promise<C> | undefined;
  let closing = false;
  const inFlight = new Set<Promise<PublishResult[]>>();

  function open(): Promise<C> {
    if (current) return current;
    let opening: Promise<C> | undefined;
    const forget = () => {
      if (current === opening) current = undefined;
    };
    opening = options.open(forget);
    current = opening;
    // A failed open is not kept: the next round tries again.
    opening.catch(forget);
    return opening;
  }

  async function connect(): Promise<Connected<C>> {
    let connection: C;
    try {
      connection = await open();
    } catch (error) {
      return { failure: options.fail(`cannot connect to ${options.where}: ${causeOf(error)}`) };
    }
    if (connection.lost !== undefined) return { failure: options.fail(`connection lost (${connection.lost})`) };
    return { connection };
  }

  function publishRound(calls: readonly BrokerCall[]): Promise<PublishResult[]> {
    if (closing) return Promise.resolve(calls.map(() => options.fail("publisher closed (the destination changed or the process stops)")));
    // Never rejects: anything unforeseen is a failed attempt naming it.
    const results = options.publishRound(calls, connect).catch((error: unknown) => calls.map(() => options.fail(causeOf(error))));
    inFlight.add(results);
    void results.then(() => inFlight.delete(results));
    return results;
  }

  return {
    publish: (call) => publishRound([call]).then((results) => results[0]!),
    publishRound,
    async close() {
      closing = true;
      await Promise.all(inFlight);
      const connection = await current?.catch(() => undefined);
      current = undefined;
      if (connection && connection.lost === undefined) {
        connection.lost = "closed";
        await options.end(connection).catch(() => {});
      }
    },
  };
}
