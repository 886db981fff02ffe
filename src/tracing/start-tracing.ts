import type { TracingConfig } from "../config.js";
import type { DropReason } from "./dropped-spans.js";
import { tracingOff, type Tracing } from "./tracing.js";

export interface StartTracingOptions {
  config: TracingConfig;
  onDropped: (count: number, reason: DropReason) => void;
}

/**
 * Tracing as configured. The OpenTelemetry SDK is loaded only when tracing
 * is on: with it off, not one of its modules is imported.
 */
export async function startTracing(options: StartTracingOptions): Promise<Tracing> {
  const { tracesUrl, protocol } = options.config;
  if (tracesUrl === undefined) return tracingOff;
  const { createOtelTracing } = await import("./otel-tracing.js");
  return createOtelTracing({ tracesUrl, protocol, onDropped: options.onDropped });
}
