/**
 * The client's log. Debug lines are written only when enabled, as with the
 * Go library: `DEBUG=analytics` (or any `debug`-style list that matches
 * `analytics`, such as `DEBUG=express:*,analytics` or `DEBUG=*`). Errors are
 * written even when debug is off, but only for failures that no `onFailure`
 * callback took, so that a lost call is never silent.
 */
export interface ClientLog {
  readonly debugEnabled: boolean;
  debug(message: string): void;
  error(message: string): void;
}

/** Where log lines go; the default is stderr in Node and the console elsewhere. */
export type LogSink = (line: string) => void;

export interface ClientLogOptions {
  /** Overrides the DEBUG environment variable. */
  debug?: boolean | undefined;
  sink?: LogSink | undefined;
}

export const debugNamespace = "analytics";

export function createClientLog(options: ClientLogOptions = {}): ClientLog {
  const debugEnabled = options.debug ?? debugMatches(readDebugEnv(), debugNamespace);
  const sink = options.sink ?? defaultSink();
  const line = (level: string, message: string) => `${debugNamespace} ${new Date().toISOString()} ${level} ${message}`;
  return {
    debugEnabled,
    debug(message) {
      if (debugEnabled) sink(line("debug", message));
    },
    error(message) {
      sink(line("error", message));
    },
  };
}

/**
 * The `debug` package's convention: names separated by commas or spaces,
 * `*` as a wildcard, a leading `-` excludes.
 */
export function debugMatches(value: string | undefined, name: string): boolean {
  if (!value) return false;
  let enabled = false;
  for (const token of value.split(/[\s,]+/)) {
    if (token === "") continue;
    if (token.startsWith("-")) {
      if (globMatches(token.slice(1), name)) return false;
    } else if (globMatches(token, name)) {
      enabled = true;
    }
  }
  return enabled;
}

function globMatches(pattern: string, name: string): boolean {
  if (!pattern.includes("*")) return pattern === name;
  const escaped = pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${escaped.join(".*")}$`).test(name);
}

/** Read once per client, lazily, and safely where there is no `process`. */
function readDebugEnv(): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.DEBUG;
}

function defaultSink(): LogSink {
  const stderr = (globalThis as { process?: { stderr?: { write(text: string): unknown } } }).process?.stderr;
  if (stderr && typeof stderr.write === "function") return (text) => void stderr.write(`${text}\n`);
  return (text) => console.error(text);
}

/**
 * Collapses a burst of identical errors (a full queue drops every call until
 * it drains) into one line now and a count later.
 */
export function createBurstLimiter(log: ClientLog, intervalMs = 10_000): (message: string) => void {
  let lastAt = -Infinity;
  let suppressed = 0;
  return (message) => {
    const now = Date.now();
    if (now - lastAt < intervalMs) {
      suppressed++;
      return;
    }
    const extra = suppressed > 0 ? ` (and ${suppressed} more like it since the last report)` : "";
    suppressed = 0;
    lastAt = now;
    log.error(message + extra);
  };
}
