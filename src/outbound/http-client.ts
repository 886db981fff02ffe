import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { Agent, buildConnector, Dispatcher, Pool, ProxyAgent } from "undici";
import type { OutboundConfig } from "../config.js";
import type { AddressGuard } from "./address-guard.js";
import { createNoProxyMatcher, type NoProxyMatcher } from "./no-proxy.js";
import { trustedContext } from "./trust.js";

export interface HttpClientOptions {
  guard: AddressGuard;
  /** The endpoint's whole answer must arrive within this. */
  timeoutMs: number;
  /** Extra trusted CA certificates (PEM), for endpoints behind a private CA; trusted beside the system roots. */
  ca?: string | string[] | undefined;
  /** Proxies and NODE_EXTRA_CA_CERTS (config.outbound); absent: direct, system roots only. */
  outbound?: OutboundConfig | undefined;
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
 * The outbound HTTP client of every kind: keep-alive connections, certificate
 * checks on (an untrusted certificate fails the TLS handshake, so no request
 * is ever written), no redirects (undici never follows them), the time
 * limits, and the address guard.
 *
 * Without a proxy (or for a NO_PROXY host) it is an undici Agent whose DNS
 * lookup runs the guard on every resolved address before a socket is
 * opened. With one, it is undici's ProxyAgent: https:// requests go through
 * a CONNECT tunnel with TLS from Waypost to the endpoint inside it, http://
 * requests as absolute-form requests to the proxy (as curl and Node send
 * them; proxies such as Squid allow CONNECT to port 443 only). Names are
 * then resolved by the proxy, which enforces its own egress policy; the
 * guard can only refuse literal addresses, which it does for every route
 * before a socket is opened. The proxy itself is the operator's choice and
 * is never refused, even on a private address.
 *
 * undici's EnvHttpProxyAgent is not used: it reads process.env at
 * construction (config is read once, in src/config.ts), and it sends https://
 * requests through HTTP_PROXY when HTTPS_PROXY is unset, which neither curl
 * nor Node does.
 */
export function createHttpClient(options: HttpClientOptions): Dispatcher {
  const outbound = options.outbound;
  const secureContext = trustedContext(options.ca, outbound?.extraCaCerts);
  const trust = { rejectUnauthorized: true, ...(secureContext ? { secureContext } : {}) };
  const pools = {
    connections: options.connectionsPerOrigin ?? 128,
    pipelining: options.pipelining ?? 1,
    keepAliveTimeout: 30_000,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
  };
  const direct = new Agent({
    ...pools,
    connect: guardedConnector(
      options.guard,
      buildConnector({ ...trust, lookup: guardedLookup(options.guard), timeout: options.timeoutMs }),
    ),
  });
  if (!outbound?.httpsProxy && !outbound?.httpProxy) return direct;
  const proxied = (uri: string, tunnel: boolean) =>
    new ProxyAgent({
      ...pools,
      uri,
      proxyTunnel: tunnel,
      // The endpoint's TLS, inside the tunnel.
      requestTls: { ...trust, timeout: options.timeoutMs },
      // An https:// proxy's own certificate.
      proxyTls: { ...trust, timeout: options.timeoutMs },
      // The connections to the proxy (the CONNECTs, and http:// requests in
      // absolute form) keep the same time limits and keep-alive.
      clientFactory: (origin, clientOptions) => new Pool(origin, { ...pools, ...clientOptions }),
      factory: (origin, poolOptions) => new Pool(origin, { ...pools, ...poolOptions }),
    });
  return new ProxyRouter({
    guard: options.guard,
    direct,
    https: outbound.httpsProxy ? proxied(outbound.httpsProxy, true) : undefined,
    http: outbound.httpProxy ? proxied(outbound.httpProxy, false) : undefined,
    noProxy: createNoProxyMatcher(outbound.noProxy),
  });
}

/**
 * Sends each request direct or through the proxy of its scheme. A literal
 * address the guard refuses is sent to the direct Agent, whose connector
 * refuses it as a connect error (so callers see it as they see any refused
 * address), never to a proxy.
 */
class ProxyRouter extends Dispatcher {
  readonly #guard: AddressGuard;
  readonly #direct: Agent;
  readonly #https: Dispatcher | undefined;
  readonly #http: Dispatcher | undefined;
  readonly #noProxy: NoProxyMatcher;
  readonly #all: Dispatcher[];
  readonly #routes = new Map<string, Dispatcher>();

  constructor(parts: {
    guard: AddressGuard;
    direct: Agent;
    https: Dispatcher | undefined;
    http: Dispatcher | undefined;
    noProxy: NoProxyMatcher;
  }) {
    super();
    this.#guard = parts.guard;
    this.#direct = parts.direct;
    this.#https = parts.https;
    this.#http = parts.http;
    this.#noProxy = parts.noProxy;
    this.#all = [parts.direct, parts.https, parts.http].filter((d): d is Dispatcher => d !== undefined);
    // A caller that waits for "drain" after dispatch() returned false hears it from here.
    for (const dispatcher of this.#all) dispatcher.on("drain", (origin) => this.emit("drain", origin));
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const origin = String(options.origin ?? "");
    let route = this.#routes.get(origin);
    if (!route) {
      route = this.#routeOf(new URL(origin));
      // Origins are few per destination (its webhook URLs, its vendor's hosts).
      if (this.#routes.size < 1024) this.#routes.set(origin, route);
    }
    return route.dispatch(options, handler);
  }

  #routeOf(url: URL): Dispatcher {
    const proxy = url.protocol === "https:" ? this.#https : url.protocol === "http:" ? this.#http : undefined;
    if (!proxy) return this.#direct;
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
    if (isIP(host) !== 0 && this.#guard.refuse(host)) return this.#direct;
    const port = Number(url.port) || (url.protocol === "https:" ? 443 : 80);
    return this.#noProxy(url.hostname, port) ? this.#direct : proxy;
  }

  override close(): Promise<void>;
  override close(callback: () => void): void;
  override close(callback?: () => void): Promise<void> | void {
    const closing = Promise.all(this.#all.map((d) => d.close())).then(() => {});
    if (!callback) return closing;
    void closing.then(callback, callback);
  }

  override destroy(): Promise<void>;
  override destroy(error: Error | null): Promise<void>;
  override destroy(callback: () => void): void;
  override destroy(error: Error | null, callback: () => void): void;
  override destroy(first?: Error | null | (() => void), second?: () => void): Promise<void> | void {
    const error = typeof first === "function" ? null : (first ?? null);
    const callback = typeof first === "function" ? first : second;
    const destroying = Promise.all(this.#all.map((d) => d.destroy(error))).then(() => {});
    if (!callback) return destroying;
    void destroying.then(callback, callback);
  }
}

/** Refuses a literal IP host before any connection (lookup is not called for those). */
export function refuseLiteralAddress(guard: AddressGuard, url: URL): string | undefined {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  return isIP(host) === 0 ? undefined : guard.refuse(host);
}

/** The connector, refusing a literal address the guard refuses before any socket (a name is checked by the lookup). */
function guardedConnector(guard: AddressGuard, connect: buildConnector.connector): buildConnector.connector {
  return (options, callback) => {
    const host = options.hostname.replace(/^\[(.*)\]$/, "$1");
    const reason = isIP(host) === 0 ? undefined : guard.refuse(host);
    if (reason) {
      callback(new RefusedAddressError(reason), null);
      return;
    }
    connect(options, callback);
  };
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
