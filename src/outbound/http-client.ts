import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { Agent } from "undici";
import type { AddressGuard } from "./address-guard.js";

export interface HttpClientOptions {
  guard: AddressGuard;
  /** The endpoint's whole answer must arrive within this. */
  timeoutMs: number;
  /** Extra trusted CA certificates (PEM), for endpoints behind a private CA. */
  ca?: string | string[] | undefined;
  /** Keep-alive connections per origin. */
  connectionsPerOrigin?: number;
  /**
   * Requests queued on one connection (default 1: none). undici queues one
   * only once the running request's answer has its headers, and writes a
   * POST only once that answer's body has been read.
   */
  pipelining?: number;
}

/** Thrown (as a connect error) when a webhook resolves to a refused address. */
export class RefusedAddressError extends Error {
  override name = "RefusedAddressError";
  readonly code = "EWAYPOST_REFUSED_ADDRESS";
}

/**
 * The outbound HTTP client: an undici Agent with keep-alive, certificate
 * checks on (an untrusted certificate fails the TLS handshake, so no request
 * is ever written), no redirects (undici's request never follows them), and
 * a DNS lookup that runs the SSRF guard on every resolved address before a
 * socket is opened.
 */
export function createHttpClient(options: HttpClientOptions): Agent {
  const lookup = guardedLookup(options.guard);
  return new Agent({
    connections: options.connectionsPerOrigin ?? 128,
    pipelining: options.pipelining ?? 1,
    keepAliveTimeout: 30_000,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    connectTimeout: options.timeoutMs,
    connect: {
      lookup,
      rejectUnauthorized: true,
      ...(options.ca ? { ca: options.ca } : {}),
    },
  });
}

/** Refuses a literal IP host before any connection (lookup is not called for those). */
export function refuseLiteralAddress(guard: AddressGuard, url: URL): string | undefined {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  return isIP(host) === 0 ? undefined : guard.refuse(host);
}

function guardedLookup(guard: AddressGuard): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error);
      for (const entry of addresses) {
        const reason = guard.refuse(entry.address);
        if (reason) return callback(new RefusedAddressError(`${hostname} resolves to ${reason}`));
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }));
      callback(null, first.address, first.family);
    });
  }) as LookupFunction;
}
