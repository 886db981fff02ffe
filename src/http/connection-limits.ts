/**
 * How long a client may take at each step of a connection, and how many
 * connections are kept. Defaults are documented in docs/limits.md; tests
 * pass short values.
 */
export interface ConnectionLimits {
  /** A new connection that sends no byte within this is closed. */
  firstByteTimeoutMs: number;
  /**
   * A request's headers must be complete this long after its first byte
   * (and an HTTP/2 connection must open its first stream this long after
   * connecting).
   */
  headersTimeoutMs: number;
  /** A request body that receives no byte for this long is cut off. */
  bodyStallTimeoutMs: number;
  /**
   * A request body must be complete this long after its headers, however
   * steadily it trickles in (500 KB at one byte per second would take days).
   */
  requestTimeoutMs: number;
  /**
   * A kept-alive connection with no request in progress (an HTTP/2 one with
   * no open stream) is closed after this. Longer than the others: SDKs
   * reuse connections between batches.
   */
  keepAliveTimeoutMs: number;
  /**
   * Open connections. At the cap, a new connection replaces the oldest idle
   * one, else the slowest sender among those we wait on (silent, sending
   * headers or a body), so a flood of silent or trickling connections
   * cannot lock out real requests (or /readyz); when every connection is
   * busy in our own handler, the new one is closed.
   */
  maxConnections: number;
  /** How often the timeouts are checked; they fire up to this much late. */
  checkIntervalMs: number;
}

export const defaultConnectionLimits: ConnectionLimits = {
  firstByteTimeoutMs: 10_000,
  headersTimeoutMs: 20_000,
  bodyStallTimeoutMs: 20_000,
  requestTimeoutMs: 300_000,
  keepAliveTimeoutMs: 65_000,
  maxConnections: 10_000,
  checkIntervalMs: 1_000,
};
