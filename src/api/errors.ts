import { Code, ConnectError } from "@connectrpc/connect";
import { uuidProblem } from "../errors.js";

/** invalid_argument naming the field, e.g. `destination.webhooks[2].url: ...`. */
export function invalidArgument(field: string, message: string): ConnectError {
  return new ConnectError(`${field}: ${message}`, Code.InvalidArgument);
}

export function notFound(what: string, id: string): ConnectError {
  return new ConnectError(`${what} ${JSON.stringify(id)} not found`, Code.NotFound);
}

/** Checks a resource id before it reaches a uuid column (which would throw). */
export function requireUuid(field: string, value: string): string {
  const problem = uuidProblem(value);
  if (problem) throw invalidArgument(field, problem);
  return value.toLowerCase();
}
