/**
 * DuckDB's module, loaded the first time a lake file is written or read:
 * its native library maps tens of megabytes into the process, which a
 * Waypost without lakes should not carry (every process's resident memory
 * counts it).
 */
export function loadDuckDB(): Promise<typeof import("@duckdb/node-api")> {
  loading ??= import("@duckdb/node-api");
  return loading;
}

let loading: Promise<typeof import("@duckdb/node-api")> | undefined;
