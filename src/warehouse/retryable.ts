/**
 * Whether a warehouse error is worth retrying on the normal schedule: the
 * warehouse is unreachable, restarting, out of resources, or the statement
 * lost a race (serialization, deadlock, a lock). Everything else (a value
 * or a name the database refuses, a column limit) is about the call itself,
 * and retrying it would fail the same way.
 */
export function isRetryableError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  // No SQLSTATE: a socket error (refused, reset, timed out) or the pool's own.
  if (typeof code !== "string" || !/^[0-9A-Z]{5}$/.test(code)) return true;
  // 28 and 3D: the warehouse refuses the login or lacks the database, 42501:
  // the role may not create the schema; settings the operator fixes, after which retries succeed.
  return ["08", "28", "3D", "40", "53", "55", "57", "58", "XX"].includes(code.slice(0, 2)) || code === "42501";
}

/**
 * The first line of an error's message, with Postgres's DETAIL when it
 * gives one (`invalid input syntax for type json: Unicode low surrogate must
 * follow a high surrogate.`), at most 1 KB (as attempts record errors).
 */
export function errorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const detail = (error as { detail?: unknown } | null)?.detail;
  const first = message.split("\n")[0]!;
  return (typeof detail === "string" && detail !== "" ? `${first}: ${detail.split("\n")[0]}` : first).slice(0, 1024);
}
