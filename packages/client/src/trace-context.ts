/** The `traceparent` of the caller's active trace context, or undefined when there is none. */
export type TraceparentReader = () => string | undefined;

/** What the client uses of `@opentelemetry/api`. */
interface OpenTelemetryApi {
  context: { active(): unknown };
  trace: { getSpanContext(context: unknown): { traceId: string; spanId: string; traceFlags: number } | undefined };
  isSpanContextValid(spanContext: { traceId: string; spanId: string; traceFlags: number }): boolean;
}

const defaultSpecifier = "@opentelemetry/api";
// One import per process, shared by every client; once it has settled,
// clients made later have the reader from their first call on.
let loading: Promise<TraceparentReader | undefined> | undefined;
let loaded: { reader: TraceparentReader | undefined } | undefined;

/** The reader, if the import has settled already (synchronously: for a client's first calls). */
export function loadedOpenTelemetryReader(): { reader: TraceparentReader | undefined } | undefined {
  return loaded;
}

/**
 * The reader of OpenTelemetry's active span context, when
 * `@opentelemetry/api` (an optional peer dependency) can be imported;
 * otherwise undefined. Imported once, on first use, never at the package's
 * import.
 */
export function loadOpenTelemetryReader(): Promise<TraceparentReader | undefined> {
  loading ??= importReader(defaultSpecifier).then((reader) => {
    loaded = { reader };
    return reader;
  });
  return loading;
}

/**
 * The reader from the module at `specifier`, or undefined when it cannot be
 * imported. The specifier is a variable so that bundlers leave the import
 * to run time instead of requiring the package to be there: without it,
 * nothing is imported and nothing is read.
 */
export async function importReader(specifier: string): Promise<TraceparentReader | undefined> {
  let api: OpenTelemetryApi;
  try {
    api = (await import(/* @vite-ignore */ /* webpackIgnore: true */ specifier)) as OpenTelemetryApi;
  } catch {
    return undefined;
  }
  if (typeof api.trace?.getSpanContext !== "function" || typeof api.context?.active !== "function") return undefined;
  return () => {
    const span = api.trace.getSpanContext(api.context.active());
    if (!span || !api.isSpanContextValid(span)) return undefined;
    return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
  };
}
