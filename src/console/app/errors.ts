import { Code, ConnectError } from "@connectrpc/connect";

/** A message for people, from whatever an RPC threw. */
export function describeError(error: unknown): string {
  if (error instanceof ConnectError) {
    if (error.code === Code.Unauthenticated) return `The server refused the sign-in (${error.rawMessage}); sign in again.`;
    return error.rawMessage;
  }
  return error instanceof Error ? error.message : String(error);
}

export function isUnauthenticated(error: unknown): boolean {
  return error instanceof ConnectError && error.code === Code.Unauthenticated;
}

/**
 * The server's invalid_argument messages start with the field they are about
 * (`destination.webhooks[0].url: must use http or https`). Returns that field
 * path without the resource prefix (`webhooks[0].url`) and the rest.
 */
export function fieldError(error: unknown, resource: string): { field: string; message: string } | undefined {
  if (!(error instanceof ConnectError) || error.code !== Code.InvalidArgument) return undefined;
  const match = /^([A-Za-z_][\w.\-[\]$]*): (.*)$/s.exec(error.rawMessage);
  if (!match) return undefined;
  const prefix = `${resource}.`;
  const field = match[1]!.startsWith(prefix) ? match[1]!.slice(prefix.length) : match[1]!;
  return { field, message: match[2]! };
}
