import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { readTraceContext } from "../tracing/trace-context.js";
import type { RequestSpan, Tracing } from "../tracing/tracing.js";

/** The tracking request's span (with tracing off: the incoming context), for the handler to store and annotate. */
export const requestSpanKey = createContextKey<RequestSpan | undefined>(undefined, { description: "tracking request span" });

/**
 * Reads traceparent and tracestate of a tracking request, whichever
 * protocol carried them (Connect, gRPC and gRPC-Web all arrive as HTTP
 * headers), and with tracing on wraps the request in a server span, a
 * child of that context. Without tracing and without a context in the
 * request it does nothing at all.
 */
export function createRequestSpanInterceptor(tracing: Tracing): Interceptor {
  return (next) => async (req) => {
    const incoming = readTraceContext(req.header.get("traceparent"), req.header.get("tracestate"));
    if (!tracing.enabled && !incoming) return next(req);
    const method = `${req.service.typeName}/${req.method.name}`;
    const span = tracing.startRequest({ name: method, incoming, attributes: rpcAttributes(method, req.header.get("content-type")) });
    req.contextValues.set(requestSpanKey, span);
    try {
      const res = await next(req);
      span.end();
      return res;
    } catch (error) {
      const failure = ConnectError.from(error);
      span.set({ "rpc.response.status_code": codeName(failure.code) });
      span.end(failure.rawMessage);
      throw error;
    }
  };
}

/** The code as the Connect protocol spells it: invalid_argument, unauthenticated... */
function codeName(code: Code): string {
  return (Code[code] ?? String(code)).replace(/[A-Z]/g, (letter, at: number) => (at > 0 ? "_" : "") + letter.toLowerCase());
}

function rpcAttributes(method: string, contentType: string | null): Record<string, string> {
  const type = contentType ?? "";
  const protocol = type.startsWith("application/grpc-web") ? "grpc-web" : type.startsWith("application/grpc") ? "grpc" : "connect";
  return { "rpc.system.name": protocol === "connect" ? "connect_rpc" : "grpc", "rpc.method": method, "waypost.protocol": protocol };
}
