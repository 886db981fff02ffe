import { Code, ConnectError } from "@connectrpc/connect";

/** A mistake in the command line: exit code 2, with a hint to --help. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** A command that ran but did not succeed (a job that was cancelled or failed): exit code 1 with its message. */
export class CommandFailure extends Error {
  override name = "CommandFailure";
}

/** Connect's wire name of a code: NotFound -> not_found. */
export function codeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/[A-Z]/g, (c, i: number) => (i === 0 ? "" : "_") + c.toLowerCase());
}

/** An RPC failure as one line for stderr: its Connect code and message. */
export function describeRpcError(error: unknown): string {
  const e = ConnectError.from(error);
  return `${codeName(e.code)}: ${e.rawMessage}`;
}
