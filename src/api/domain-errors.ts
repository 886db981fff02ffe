import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { InvalidInputError, NotFoundError } from "../errors.js";

/**
 * The one place domain errors become Connect codes. Anything else passes
 * through unchanged (Connect turns a plain Error into `internal`, and the
 * error-log interceptor logs it); the original stays as the cause.
 */
export function toConnectError(error: unknown): unknown {
  if (error instanceof InvalidInputError) return new ConnectError(error.message, Code.InvalidArgument, undefined, undefined, error);
  if (error instanceof NotFoundError) return new ConnectError(error.message, Code.NotFound, undefined, undefined, error);
  return error;
}

async function* mapStreamErrors<T>(messages: AsyncIterable<T>): AsyncIterable<T> {
  try {
    yield* messages;
  } catch (error) {
    throw toConnectError(error);
  }
}

/**
 * Maps domain errors thrown by a handler, and by a streaming response while
 * it is read. It goes innermost, so the interceptors around it (the error
 * log) see the Connect code the client gets.
 */
export function createDomainErrorInterceptor(): Interceptor {
  return (next) => async (request) => {
    try {
      const response = await next(request);
      return response.stream ? { ...response, message: mapStreamErrors(response.message) } : response;
    } catch (error) {
      throw toConnectError(error);
    }
  };
}
