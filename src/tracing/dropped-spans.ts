import { createNoopMeter, type Attributes, type Meter, type MeterProvider } from "@opentelemetry/api";

/** Why spans never reached the collector. */
export type DropReason = "queue_full" | "export_failed";

// The SDK's batch processor counts every span it finishes under this name,
// with an error.type of "queue_full" for spans it had no room for and the
// export error's name for spans whose export failed.
const processedSpans = "otel.sdk.processor.span.processed";

/**
 * A meter provider for the batch processor's self-observability that keeps
 * one thing of it: the spans it dropped, handed to `onDropped`. Everything
 * else it measures goes to no-op instruments.
 */
export function createDroppedSpanMeter(onDropped: (count: number, reason: DropReason) => void): MeterProvider {
  const noop = createNoopMeter();
  const meter: Meter = Object.create(noop, {
    createCounter: {
      value: (name: string, options?: Parameters<Meter["createCounter"]>[1]) => {
        if (name !== processedSpans) return noop.createCounter(name, options);
        return {
          add(value: number, attributes?: Attributes) {
            const type = attributes?.["error.type"];
            if (type === undefined) return;
            onDropped(value, type === "queue_full" ? "queue_full" : "export_failed");
          },
        };
      },
    },
  });
  return { getMeter: () => meter };
}
