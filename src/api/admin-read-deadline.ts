import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/** Postgres' query_canceled: statement_timeout fired (or an operator cancelled it). */
const queryCanceled = "57014";
/** What pg-pool rejects with when no connection came free within connectionTimeoutMillis. */
const poolWaitTimeouts = ["timeout exceeded when trying to connect", "Connection terminated due to connection timeout"];

/**
 * Turns the admin read pool's time limits into `deadline_exceeded` with a
 * message saying which limit and what to do, instead of an internal error:
 * a search over millions of deliveries cut at the statement timeout is the
 * caller's request being too broad, or the server too busy, not a bug.
 */
export function createAdminReadDeadline(statementTimeoutMs: number): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      const message = error instanceof Error ? error.message : "";
      if (code === queryCanceled) {
        throw new ConnectError(
          `the query ran past the admin statement timeout of ${statementTimeoutMs} ms (WAYPOST_ADMIN_STATEMENT_TIMEOUT_MS): narrow it with destinationId, since/until or a smaller pageSize`,
          Code.DeadlineExceeded,
        );
      }
      if (!(error instanceof ConnectError) && poolWaitTimeouts.includes(message)) {
        throw new ConnectError(
          `admin reads are busy: no database connection for them came free within ${statementTimeoutMs} ms (WAYPOST_ADMIN_READ_CONNECTIONS); retry later`,
          Code.DeadlineExceeded,
        );
      }
      throw error;
    }
  };
}
