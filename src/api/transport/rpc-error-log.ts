import { Code, ConnectError, type Interceptor, type StreamResponse } from "@connectrpc/connect";
import type { Logger } from "../../logger.js";

/** Codes that mean the server failed, not the request: worth an operator's attention. */
const serverCodes = new Set([Code.Internal, Code.Unknown, Code.DataLoss, Code.Unavailable]);

/**
 * Logs RPCs that fail with a server error, with the cause (a Postgres
 * outage, a bug), at `error`; client errors (invalid_argument, not_found,
 * unauthenticated...) are the caller's business and are not logged.
 */
export function createErrorLogInterceptor(logger: Logger): Interceptor {
  const report = (rpc: string, error: unknown) => {
    const connectError = ConnectError.from(error);
    if (!serverCodes.has(connectError.code)) return;
    logger.error({ err: connectError.cause ?? error, rpc, code: Code[connectError.code] }, "rpc failed with a server error");
  };
  return (next) => async (req) => {
    const rpc = `${req.service.typeName}/${req.method.name}`;
    try {
      const res = await next(req);
      if (!res.stream) return res;
      // A streamed response can still fail while its messages are produced.
      return { ...res, message: logFailures(res, (error) => report(rpc, error)) } as StreamResponse;
    } catch (error) {
      report(rpc, error);
      throw error;
    }
  };
}

async function* logFailures(res: StreamResponse, onError: (error: unknown) => void): AsyncIterable<never> {
  try {
    yield* res.message as AsyncIterable<never>;
  } catch (error) {
    onError(error);
    throw error;
  }
}
