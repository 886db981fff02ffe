/**
 * `@waypost/client/browser`: the same API as `@waypost/client` for browsers,
 * web workers and edge runtimes. Requests go through `fetch` (the Connect
 * web transport); nothing here imports a Node built-in.
 *
 * Differences from the Node entry: `httpVersion` is ignored (the runtime's
 * fetch chooses), and `verifyWebhookSignature` is asynchronous (WebCrypto).
 *
 * Note that a write key shipped to browsers is public: anyone can send
 * calls into that source. That is the usual trade-off of client-side
 * analytics; keep server-side sources' keys on servers.
 */
import type { Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import type { TrackingService } from "../../../gen/waypost/v1/tracking_pb.js";
import { AnalyticsClient } from "./analytics.js";
import {
  createTrackingClientWith,
  type DefaultTransportSettings,
  type OwnedTransport,
  type TrackingClientOptions,
} from "./auth-transport.js";
import type { AnalyticsOptions } from "./options.js";

export * from "./public-api.js";
/**
 * `X-Signature` verification in browsers and edge runtimes: WebCrypto is
 * asynchronous, so this one resolves to the boolean (`await` works the same
 * on the Node entry's synchronous version).
 */
export { verifyWebhookSignatureAsync as verifyWebhookSignature } from "./signature-web.js";

/** The Connect web transport (JSON over fetch); it holds nothing to release. */
function createWebTransport(settings: DefaultTransportSettings): OwnedTransport {
  const transport = createConnectTransport({
    baseUrl: settings.endpoint,
    useBinaryFormat: false,
    interceptors: settings.interceptors,
  });
  return { transport, release: () => {} };
}

/** The batching client, over `fetch`. See `@waypost/client` for the options. */
export class Analytics extends AnalyticsClient {
  constructor(options: AnalyticsOptions) {
    super(options, createWebTransport);
  }
}

/** Same as `new Analytics(options)`. */
export function createAnalytics(options: AnalyticsOptions): Analytics {
  return new Analytics(options);
}

/** A Connect client for TrackingService carrying the write key, over `fetch`. */
export function createTrackingClient(options: TrackingClientOptions): Client<typeof TrackingService> {
  return createTrackingClientWith(createWebTransport, options);
}
