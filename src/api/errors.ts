import { Code, ConnectError } from "@connectrpc/connect";

/** invalid_argument naming the field, e.g. `destination.webhooks[2].url: ...`. */
export function invalidArgument(field: string, message: string): ConnectError {
  return new ConnectError(`${field}: ${message}`, Code.InvalidArgument);
}

export function notFound(what: string, id: string): ConnectError {
  return new ConnectError(`${what} ${JSON.stringify(id)} not found`, Code.NotFound);
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Checks a resource id before it reaches a uuid column (which would throw). */
export function requireUuid(field: string, value: string): string {
  if (value === "") throw invalidArgument(field, "is required");
  if (!uuidPattern.test(value)) throw invalidArgument(field, `${JSON.stringify(value.slice(0, 64))} is not a valid id`);
  return value.toLowerCase();
}

