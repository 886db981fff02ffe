/**
 * `@waypost/client` for Node: the batching `Analytics` client (the Go
 * library v2's replacement), a plain Connect client factory for
 * TrackingService, webhook signature verification, and the generated
 * service descriptors and message types.
 *
 * In browsers and edge runtimes use `@waypost/client/browser` instead: the
 * same API over `fetch`, without Node built-ins.
 */
import type { Client } from "@connectrpc/connect";
import type { TrackingService } from "../../../gen/waypost/v1/tracking_pb.js";
import { AnalyticsClient } from "./analytics.js";
import { createTrackingClientWith, type TrackingClientOptions } from "./auth-transport.js";
import type { AnalyticsOptions } from "./options.js";
import { createNodeTransport } from "./transport.js";

export * from "./public-api.js";
export { verifyWebhookSignature } from "./signature.js";

/**
 * The batching client (Go: `analytics.New(writeKey)`), over HTTP/1.1 or
 * HTTP/2 (`httpVersion`) with Node's `http` modules.
 *
 * @example
 * const analytics = new Analytics({ writeKey, endpoint: "http://127.0.0.1:8080" });
 * analytics.track({ userId: "u1", event: "Signed Up", properties: { plan: "pro" } });
 * await analytics.close();
 */
export class Analytics extends AnalyticsClient {
  constructor(options: AnalyticsOptions) {
    super(options, createNodeTransport);
  }
}

/** Same as `new Analytics(options)`. */
export function createAnalytics(options: AnalyticsOptions): Analytics {
  return new Analytics(options);
}

/**
 * A Connect client for `waypost.v1.TrackingService` (Batch and the unary
 * Identify/Track/Page/Screen/Group/Alias RPCs) whose requests carry
 * `Authorization: Basic base64(writeKey + ":")`. No batching, no retries:
 * each method call is one request. The default transport's idle keep-alive
 * sockets do not keep the process alive.
 */
export function createTrackingClient(options: TrackingClientOptions): Client<typeof TrackingService> {
  return createTrackingClientWith(createNodeTransport, options);
}
