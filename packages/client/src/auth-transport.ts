import { createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { TrackingService } from "../../../gen/waypost/v1/tracking_pb.js";
import { checkEndpoint } from "./options.js";

/**
 * Platform-neutral pieces shared by the Node and the browser entry points:
 * write-key authentication, and the shape a platform's default transport
 * takes.
 */

/** `Basic base64(writeKey + ":")`, the convention analytics SDKs use. */
export function basicAuthorization(writeKey: string): string {
  const bytes = new TextEncoder().encode(`${writeKey}:`);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `Basic ${btoa(binary)}`;
}

/**
 * Wraps a transport so that every request carries the write key. Wrapping
 * (rather than an interceptor) works for transports the caller built.
 */
export function withWriteKey(transport: Transport, writeKey: string): Transport {
  const authorization = basicAuthorization(writeKey);
  const withAuth = (header: HeadersInit | undefined): Headers => {
    const headers = new Headers(header);
    headers.set("Authorization", authorization);
    return headers;
  };
  return {
    unary: (method, signal, timeoutMs, header, input, contextValues) =>
      transport.unary(method, signal, timeoutMs, withAuth(header), input, contextValues),
    stream: (method, signal, timeoutMs, header, input, contextValues) =>
      transport.stream(method, signal, timeoutMs, withAuth(header), input, contextValues),
  };
}

/** Options of `createTrackingClient`. */
export interface TrackingClientOptions {
  /** Base URL of the Waypost server, e.g. `"http://127.0.0.1:8080"`. */
  endpoint: string;
  /** The source's write key, sent as `Authorization: Basic base64(writeKey + ":")`. */
  writeKey: string;
  /** A transport to use instead of the platform's default one. */
  transport?: Transport;
  /** Node only: HTTP version of the default transport. Default `"1.1"`. */
  httpVersion?: "1.1" | "2";
  /** Interceptors for the default transport. */
  interceptors?: Interceptor[];
}

/** Settings a platform needs to build its default transport. */
export interface DefaultTransportSettings {
  endpoint: string;
  httpVersion: "1.1" | "2";
  interceptors: Interceptor[];
}

/** A transport plus a way to release what it holds (sockets, sessions). */
export interface OwnedTransport {
  transport: Transport;
  release(): void;
}

/** Builds the default transport of one platform (Node or browser). */
export type TransportFactory = (settings: DefaultTransportSettings) => OwnedTransport;

/** The given transport (not owned: never released) or a new default one. */
export function obtainTransport(
  factory: TransportFactory,
  options: Pick<TrackingClientOptions, "endpoint" | "transport" | "httpVersion" | "interceptors">,
): OwnedTransport {
  if (options.transport) return { transport: options.transport, release: () => {} };
  return factory({
    endpoint: options.endpoint,
    httpVersion: options.httpVersion ?? "1.1",
    interceptors: options.interceptors ?? [],
  });
}

/** A TrackingService client whose requests carry the write key. */
export function trackingClientFor(transport: Transport, writeKey: string): Client<typeof TrackingService> {
  return createClient(TrackingService, withWriteKey(transport, writeKey));
}

/**
 * `createTrackingClient` of either entry point: checks the options, then
 * builds the client on the given transport or the platform's default one.
 */
export function createTrackingClientWith(factory: TransportFactory, options: TrackingClientOptions): Client<typeof TrackingService> {
  if (typeof options.writeKey !== "string" || options.writeKey === "") {
    throw new TypeError("options.writeKey is required: the write key of a Waypost source");
  }
  const endpoint = checkEndpoint(options.endpoint);
  const { transport } = obtainTransport(factory, { ...options, endpoint });
  return trackingClientFor(transport, options.writeKey);
}
