import type { AttemptResult, ClaimedDelivery } from "../../db/job-table/index.js";
import type { WebhookRequest } from "../../outbound/send.js";
import type { TraceContext } from "../../tracing/trace-context.js";
import type { AttemptSpan, SpanAttributes, Tracing } from "../../tracing/tracing.js";
import type { DestinationCommon } from "./kind.js";

/** A delivery's requests as they are sent, and what ends their spans. */
export interface TracedAttempt {
  requests: readonly WebhookRequest[];
  /** Ends each request's span with its result (same order as `requests`). */
  end(results: readonly AttemptResult[]): void;
}

const untraced = (requests: readonly WebhookRequest[]): TracedAttempt => ({ requests, end() {} });

function parentOf(job: ClaimedDelivery): TraceContext | undefined {
  return job.traceparent ? { traceparent: job.traceparent, tracestate: job.tracestate ?? undefined } : undefined;
}

/** Which delivery of which destination an attempt is: on every attempt's span, whatever its kind. */
export function attemptAttributes(job: ClaimedDelivery, destination: DestinationCommon): SpanAttributes {
  return {
    "waypost.destination.id": destination.id,
    "waypost.destination.name": destination.name,
    "waypost.delivery.id": job.id,
    "waypost.message.id": job.messageId,
    "waypost.attempt.number": job.attemptCount + 1,
  };
}

/**
 * With tracing on, one client span per webhook request of this attempt, a
 * child of the call's stored trace context, and each request carries the
 * traceparent of its own span, so the receiver's spans are its children.
 * Off, the requests go as prepared (with the stored context, if any).
 */
export function traceRequests(
  tracing: Tracing,
  job: ClaimedDelivery,
  destination: DestinationCommon,
  requests: readonly WebhookRequest[],
): TracedAttempt {
  if (!tracing.enabled) return untraced(requests);
  const spans: AttemptSpan[] = [];
  const traced = requests.map((request) => {
    const span = tracing.startAttempt(parentOf(job), "POST", { ...requestAttributes(request), ...attemptAttributes(job, destination) });
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

/**
 * One span around an attempt of a kind that does not start its own (a
 * warehouse load, a publish): named by the kind, ended with the attempt's
 * outcome once the kind reports it. The kind is handed the call with the
 * span's trace context in place of the stored one, so what it sends on (a
 * message's traceparent header) makes the consumer's spans children of it.
 */
export async function traceDelivery(
  tracing: Tracing,
  job: ClaimedDelivery,
  destination: DestinationCommon,
  span: { name: string; attributes: SpanAttributes },
  deliver: (job: ClaimedDelivery) => Promise<AttemptResult[]>,
): Promise<AttemptResult[]> {
  if (!tracing.enabled) return deliver(job);
  const started = tracing.startAttempt(parentOf(job), span.name, { ...span.attributes, ...attemptAttributes(job, destination) });
  const context = started.headers.traceparent
    ? { ...job, traceparent: started.headers.traceparent, tracestate: started.headers.tracestate ?? job.tracestate ?? null }
    : job;
  const results = await deliver(context);
  const result = results.find((r) => r.outcome === "success") ?? results[0];
  if (result) started.end(...resultAttributes(result));
  else started.end({}, "no result");
  return results;
}

/** HTTP client semantic conventions. */
function requestAttributes(request: WebhookRequest): SpanAttributes {
  const url = request.target;
  return {
    "http.request.method": "POST",
    "server.address": url.hostname,
    "server.port": Number(url.port) || (url.protocol === "https:" ? 443 : 80),
    // Without the query, which may carry a token.
    "url.full": `${url.origin}${url.pathname}`,
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
