import type { ClaimedDelivery } from "../db/job-table/index.js";
import type { DestinationConfigRow } from "../db/queries/destinations.js";
import type { AttemptResult, WebhookRequest } from "../outbound/send.js";
import type { TraceContext } from "../tracing/trace-context.js";
import type { AttemptSpan, SpanAttributes, Tracing } from "../tracing/tracing.js";

/** A delivery's requests as they are sent, and what ends their spans. */
export interface TracedAttempt {
  requests: readonly WebhookRequest[];
  /** Ends each request's span with its result (same order as `requests`). */
  end(results: readonly AttemptResult[]): void;
}

const untraced = (requests: readonly WebhookRequest[]): TracedAttempt => ({ requests, end() {} });

/**
 * With tracing on, one client span per webhook request of this attempt, a
 * child of the call's stored trace context, and each request carries the
 * traceparent of its own span, so the receiver's spans are its children.
 * Off, the requests go as prepared (with the stored context, if any).
 */
export function traceAttempt(
  tracing: Tracing,
  job: ClaimedDelivery,
  destination: DestinationConfigRow,
  requests: readonly WebhookRequest[],
): TracedAttempt {
  if (!tracing.enabled) return untraced(requests);
  const parent: TraceContext | undefined = job.traceparent
    ? { traceparent: job.traceparent, tracestate: job.tracestate ?? undefined }
    : undefined;
  const spans: AttemptSpan[] = [];
  const traced = requests.map((request) => {
    const span = tracing.startAttempt(parent, "POST", requestAttributes(job, destination, request));
    spans.push(span);
    return { ...request, headers: { ...request.headers, ...span.headers } };
  });
  return {
    requests: traced,
    end(results) {
      spans.forEach((span, i) => {
        const result = results[i];
        if (result) span.end(...resultAttributes(result));
        else span.end({}, "no result");
      });
    },
  };
}

/** HTTP client semantic conventions, and which delivery of which destination this is. */
function requestAttributes(job: ClaimedDelivery, destination: DestinationConfigRow, request: WebhookRequest): SpanAttributes {
  const url = request.target;
  return {
    "http.request.method": "POST",
    "server.address": url.hostname,
    "server.port": Number(url.port) || (url.protocol === "https:" ? 443 : 80),
    // Without the query, which may carry a token.
    "url.full": `${url.origin}${url.pathname}`,
    "waypost.destination.id": destination.id,
    "waypost.destination.name": destination.name,
    "waypost.delivery.id": job.id,
    "waypost.message.id": job.messageId,
    "waypost.attempt.number": job.attemptCount + 1,
  };
}

function resultAttributes(result: AttemptResult): [SpanAttributes, string | undefined] {
  const attributes: SpanAttributes = { "waypost.attempt.outcome": result.outcome };
  if (result.statusCode !== null) attributes["http.response.status_code"] = result.statusCode;
  if (result.outcome === "success") return [attributes, undefined];
  // error.type: the status code, or the kind of failure when there was no answer.
  attributes["error.type"] = result.statusCode !== null ? String(result.statusCode) : result.outcome;
  return [attributes, result.error ?? `HTTP ${result.statusCode}`];
}
