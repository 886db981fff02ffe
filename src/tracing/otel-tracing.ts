import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type SpanContext } from "@opentelemetry/api";
import { TraceState } from "@opentelemetry/core";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, type BufferConfig } from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import { createDroppedSpanMeter, type DropReason } from "./dropped-spans.js";
import { formatTraceparent, parseTraceparent, traceHeaders, type TraceContext } from "./trace-context.js";
import type { AttemptSpan, RequestSpan, SpanAttributes, Tracing } from "./tracing.js";

export interface OtelTracingOptions {
  /** Where spans are POSTed over OTLP/HTTP: the full traces URL. */
  tracesUrl: string;
  /** Protobuf costs about half the CPU per span of JSON to encode. */
  protocol: "http/protobuf" | "http/json";
  /** Spans the batch processor dropped (queue full, or export failed). */
  onDropped: (count: number, reason: DropReason) => void;
}

/**
 * Tracing through the OpenTelemetry JS SDK: a tracer provider of this
 * process's own (never the global one, so several Waypost instances in one
 * process, and a host application's SDK, do not interfere), a batch span
 * processor with a bounded queue (OTEL_BSP_*), and the OTLP/HTTP exporter
 * (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT...). The sampler
 * (OTEL_TRACES_SAMPLER) and the resource (OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES) come from the environment as the SDK reads it;
 * the service name defaults to "waypost".
 */
export function createOtelTracing(options: OtelTracingOptions): Tracing {
  const exporter =
    options.protocol === "http/json" ? new JsonExporter({ url: options.tracesUrl }) : new ProtobufExporter({ url: options.tracesUrl });
  // Spans wait in the processor's queue and leave in batches, off the
  // request and delivery paths: a slow or absent collector fills the queue,
  // and what does not fit is dropped and counted, never waited for.
  const bufferConfig = { selfObsMeterProvider: createDroppedSpanMeter(options.onDropped) } as BufferConfig;
  const processor = new BatchSpanProcessor(exporter, bufferConfig);
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: "waypost" }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  const tracer = provider.getTracer("waypost");

  return {
    enabled: true,
    startRequest({ name, incoming, attributes }): RequestSpan {
      const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parentContext(incoming));
      return {
        stored: ownContext(span, incoming),
        set: (more) => span.setAttributes(more),
        end: (error) => finish(span, error),
      };
    },
    startAttempt(parent, name, attributes): AttemptSpan {
      const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parentContext(parent));
      return {
        headers: traceHeaders(ownContext(span, parent)),
        end(more: SpanAttributes, error?: string) {
          span.setAttributes(more);
          finish(span, error);
        },
      };
    },
    flush: () => provider.forceFlush(),
    async shutdown(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
      // A collector that never answers must not hold up stopping.
      await Promise.race([provider.shutdown().catch(() => {}), gaveUp]);
      clearTimeout(timer);
    },
  };
}

function finish(span: Span, error: string | undefined): void {
  if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
  span.end();
}

/** The OpenTelemetry context whose span is a stored or incoming trace context (the root when there is none). */
function parentContext(context: TraceContext | undefined): Context {
  const parsed = parseTraceparent(context?.traceparent);
  if (!parsed) return ROOT_CONTEXT;
  const parent: SpanContext = {
    traceId: parsed.traceId,
    spanId: parsed.parentId,
    traceFlags: parsed.flags & 0x01,
    isRemote: true,
    ...(context?.tracestate ? { traceState: new TraceState(context.tracestate) } : {}),
  };
  return trace.setSpanContext(ROOT_CONTEXT, parent);
}

/**
 * The context to hand on: the span's own, so the next hop is its child. A
 * span the sampler dropped is never exported, so a child of it would hang
 * off a span no one can see: then the parent's context is handed on as it
 * came (a new one only when there was none).
 */
function ownContext(span: Span, parent: TraceContext | undefined): TraceContext {
  if (parent && !span.isRecording()) return parent;
  const own = span.spanContext();
  const state = own.traceState?.serialize();
  return { traceparent: formatTraceparent(own.traceId, own.spanId, own.traceFlags), ...(state ? { tracestate: state } : {}) };
}
