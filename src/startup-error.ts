/**
 * A start-up failure explained for the operator: what failed and what to do,
 * with the underlying error kept as its cause. Errors are turned into one
 * where they enter (the embedded Postgres, the database connection, the
 * listener), where it is known what they mean.
 */
export class StartupError extends Error {
  override name = "StartupError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The line `waypost: failed to start: …` prints: the explanation and its cause, or the stack of an unexpected error. */
export function describeStartupFailure(error: unknown): string {
  if (error instanceof StartupError) {
    const cause = error.cause instanceof Error ? error.cause.message : error.cause === undefined ? "" : String(error.cause);
    return cause && !error.message.includes(cause) ? `${error.message}\n  cause: ${cause}` : error.message;
  }
  if (error instanceof Error) return error.stack ?? error.message;
  return `unexpected failure: ${String(error)} (run with WAYPOST_LOG_LEVEL=debug for details)`;
}

/** host:port/database of a connection string, without credentials, for messages. */
export function describeDatabaseUrl(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    return `${url.hostname || "localhost"}:${url.port || "5432"}${url.pathname}`;
  } catch {
    return "(an unparsable URL)";
  }
}
