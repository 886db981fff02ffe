import { expect, test } from "vitest";
import { availableParallelism } from "node:os";
import { ConfigError, loadConfig } from "../src/config.js";

test("defaults are the documented ones", () => {
  const config = loadConfig({});
  expect(config.port).toBe(8080);
  expect(config.role).toBe("all");
  expect(config.databaseUrl).toBeUndefined();
  expect(config.dataDir).toBe("./.waypost");
  expect(config.delivery.timeoutMs).toBe(5_000);
  expect(config.delivery.shutdownTimeoutMs).toBe(10_000);
  expect(config.delivery.pipelining).toBe(1);
  expect(config.delivery.concurrency).toBe(1024);
  expect(config.delivery.perDestinationConcurrency).toBe(64);
  expect(config.delivery.retry.initialDelayMs).toBe(10_000);
  expect(config.delivery.retry.maxDelayMs).toBe(30 * 60_000);
  expect(config.delivery.retry.deadlineMs).toBe(4 * 3_600_000);
  expect(config.retentionMs).toBe(7 * 24 * 3_600_000);
  expect(config.delivery.allowPrivateDestinations).toBe(false);
  expect(config.jobTable).toEqual({ layout: "auto", shardCount: 32 });
  expect(loadConfig({ WAYPOST_JOB_TABLE: "citus", WAYPOST_CITUS_SHARD_COUNT: "8" }).jobTable).toEqual({ layout: "citus", shardCount: 8 });
});

test("bad values are refused naming the variable", () => {
  expect(() => loadConfig({ PORT: "eighty" })).toThrow(/PORT/);
  expect(() => loadConfig({ WAYPOST_ROLE: "boss" })).toThrow(/WAYPOST_ROLE/);
  expect(() => loadConfig({ WAYPOST_JOB_TABLE: "sharded" })).toThrow(/WAYPOST_JOB_TABLE must be auto or citus, got "sharded"/);
  expect(() => loadConfig({ WAYPOST_CITUS_SHARD_COUNT: "0" })).toThrow(/WAYPOST_CITUS_SHARD_COUNT must be an integer from 1 to 1024/);
  expect(() => loadConfig({ WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "10.0.0.0/99" })).toThrow(/WAYPOST_ALLOW_PRIVATE_DESTINATIONS/);
  expect(() => loadConfig({ WAYPOST_ADMIN_TOKEN: "short" })).toThrow(/WAYPOST_ADMIN_TOKEN/);
  for (const bad of ["0", "17", "2.5", "two"]) {
    expect(() => loadConfig({ WAYPOST_HTTP_PIPELINING: bad })).toThrow(/WAYPOST_HTTP_PIPELINING must be an integer from 1 to 16/);
  }
  expect(loadConfig({ WAYPOST_HTTP_PIPELINING: "2" }).delivery.pipelining).toBe(2);
  expect(loadConfig({ WAYPOST_HTTP_PIPELINING: "16" }).delivery.pipelining).toBe(16);
  expect(loadConfig({}).ingestConcurrency).toBe(0);
  expect(loadConfig({ WAYPOST_INGEST_CONCURRENCY: "4" }).ingestConcurrency).toBe(4);
  for (const bad of ["-1", "1.5", "many"]) {
    expect(() => loadConfig({ WAYPOST_INGEST_CONCURRENCY: bad })).toThrow(/WAYPOST_INGEST_CONCURRENCY must be an integer from 0 to 10000/);
  }
});

test("the call log is on unless WAYPOST_CALL_LOG is off", () => {
  expect(loadConfig({}).delivery.callLog).toBe(true);
  expect(loadConfig({ WAYPOST_CALL_LOG: "on" }).delivery.callLog).toBe(true);
  expect(loadConfig({ WAYPOST_CALL_LOG: " OFF " }).delivery.callLog).toBe(false);
  expect(() => loadConfig({ WAYPOST_CALL_LOG: "yes" })).toThrow(/WAYPOST_CALL_LOG must be on or off, got "yes"/);
});

test("private destinations: true, or a CIDR list", () => {
  expect(loadConfig({ WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "true" }).delivery.allowPrivateDestinations).toBe(true);
  expect(loadConfig({ WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "10.0.0.0/8, fd00::/8" }).delivery.allowedCidrs).toEqual([
    "10.0.0.0/8",
    "fd00::/8",
  ]);
});

test("circuit breaker, signing overlap and operator webhook settings", () => {
  const defaults = loadConfig({});
  expect(defaults.delivery.circuit).toMatchObject({ failures: 20, minSpanMs: 60_000, cooldownMs: 30_000, maxCooldownMs: 600_000 });
  expect(defaults.signingSecretOverlapMs).toBe(24 * 3_600_000);
  expect(defaults.operatorWebhook).toBeUndefined();
  const set = loadConfig({
    WAYPOST_CIRCUIT_FAILURES: "5",
    WAYPOST_CIRCUIT_MIN_SPAN_MS: "0",
    WAYPOST_CIRCUIT_COOLDOWN_MS: "1000",
    WAYPOST_CIRCUIT_MAX_COOLDOWN_MS: "2000",
    WAYPOST_SIGNING_SECRET_OVERLAP_MS: "60000",
    WAYPOST_OPERATOR_WEBHOOK_URL: "https://ops.example.com/events",
    WAYPOST_OPERATOR_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 1).toString("base64")}`,
  });
  expect(set.delivery.circuit).toMatchObject({ failures: 5, minSpanMs: 0, cooldownMs: 1000, maxCooldownMs: 2000 });
  expect(set.signingSecretOverlapMs).toBe(60_000);
  expect(set.operatorWebhook?.url).toBe("https://ops.example.com/events");
  expect(() => loadConfig({ WAYPOST_CIRCUIT_FAILURES: "0" })).toThrow(/WAYPOST_CIRCUIT_FAILURES/);
  expect(() => loadConfig({ WAYPOST_CIRCUIT_COOLDOWN_MS: "5000", WAYPOST_CIRCUIT_MAX_COOLDOWN_MS: "1000" })).toThrow(
    /WAYPOST_CIRCUIT_MAX_COOLDOWN_MS/,
  );
  expect(() => loadConfig({ WAYPOST_OPERATOR_WEBHOOK_URL: "https://ops.example.com/events" })).toThrow(/WAYPOST_OPERATOR_WEBHOOK_SECRET/);
  expect(() => loadConfig({ WAYPOST_OPERATOR_WEBHOOK_URL: "ftp://x", WAYPOST_OPERATOR_WEBHOOK_SECRET: "whsec_x" })).toThrow(
    /WAYPOST_OPERATOR_WEBHOOK_URL/,
  );
  expect(() =>
    loadConfig({ WAYPOST_OPERATOR_WEBHOOK_URL: "https://ops.example.com/", WAYPOST_OPERATOR_WEBHOOK_SECRET: "whsec_c2hvcnQ=" }),
  ).toThrow(/WAYPOST_OPERATOR_WEBHOOK_SECRET must encode 24 to 64 bytes/);
  expect(() => loadConfig({ WAYPOST_OPERATOR_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32).toString("base64")}` })).toThrow(
    /WAYPOST_OPERATOR_WEBHOOK_URL/,
  );
});

test("the service listens on loopback unless HOST says otherwise", () => {
  expect(loadConfig({}).host).toBe("127.0.0.1");
  expect(loadConfig({ HOST: "0.0.0.0" }).host).toBe("0.0.0.0");
});

test("connection cap and summary interval come from the environment, with documented defaults", () => {
  const defaults = loadConfig({});
  expect(defaults.connections.maxConnections).toBe(10_000);
  expect(defaults.connections.firstByteTimeoutMs).toBe(10_000);
  expect(defaults.summaryIntervalMs).toBe(60_000);
  const set = loadConfig({ WAYPOST_MAX_CONNECTIONS: "500", WAYPOST_SUMMARY_INTERVAL_SECONDS: "0" });
  expect(set.connections.maxConnections).toBe(500);
  expect(set.summaryIntervalMs).toBe(0);
  expect(() => loadConfig({ WAYPOST_MAX_CONNECTIONS: "many" })).toThrow(/WAYPOST_MAX_CONNECTIONS/);
});

test("WAYPOST_LOG_LEVEL is one of pino's levels, or a ConfigError naming the variable", () => {
  for (const level of ["fatal", "error", "warn", "info", "debug", "trace", "silent"]) {
    expect(loadConfig({ WAYPOST_LOG_LEVEL: level }).logLevel).toBe(level);
  }
  expect(loadConfig({ WAYPOST_LOG_LEVEL: "" }).logLevel).toBe("info");
  expect(() => loadConfig({ WAYPOST_LOG_LEVEL: "verbose" })).toThrow(
    'WAYPOST_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"',
  );
  expect(() => loadConfig({ WAYPOST_LOG_LEVEL: "INFO" })).toThrow(ConfigError);
});

test("DATABASE_URL must be a Postgres connection string; the refusal names its scheme, never its password", () => {
  for (const url of [
    "postgres://u:p@db:5432/waypost",
    "postgresql://db/waypost",
    "socket:/var/run/postgresql?db=waypost",
    "/var/run/postgresql",
  ]) {
    expect(loadConfig({ DATABASE_URL: url }).databaseUrl).toBe(url);
  }
  const refusal = (url: string) => {
    try {
      loadConfig({ DATABASE_URL: url });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as Error).message;
    }
    throw new Error(`${url} was accepted`);
  };
  const mysql = refusal("mysql://root:hunter2-secret@db:3306/waypost");
  expect(mysql).toMatch(/^DATABASE_URL must be a Postgres URL like postgres:\/\/user:password@host:5432\/database, got a mysql: URL/);
  expect(mysql).not.toContain("hunter2-secret");
  expect(refusal("db.internal:5432")).toMatch(/^DATABASE_URL must be a Postgres URL/);
  expect(refusal("waypost")).toMatch(/^DATABASE_URL must be a Postgres URL/);
});

test("admin reads: their pool size and statement timeout come from the environment, with documented defaults", () => {
  expect(loadConfig({}).adminReads).toEqual({ connections: 4, statementTimeoutMs: 15_000, maxResponseBytes: 4 * 1024 * 1024 });
  const set = loadConfig({ WAYPOST_ADMIN_READ_CONNECTIONS: "8", WAYPOST_ADMIN_STATEMENT_TIMEOUT_MS: "2000" });
  expect(set.adminReads.connections).toBe(8);
  expect(set.adminReads.statementTimeoutMs).toBe(2_000);
  expect(() => loadConfig({ WAYPOST_ADMIN_READ_CONNECTIONS: "0" })).toThrow(/WAYPOST_ADMIN_READ_CONNECTIONS/);
  expect(() => loadConfig({ WAYPOST_ADMIN_STATEMENT_TIMEOUT_MS: "soon" })).toThrow(/WAYPOST_ADMIN_STATEMENT_TIMEOUT_MS/);
});

test("transform limits: 50 ms, 32 MB and a worker per core unless set, bounded", () => {
  expect(loadConfig({}).transform).toEqual({ timeoutMs: 50, memoryMb: 32, workers: availableParallelism() });
  expect(
    loadConfig({ WAYPOST_TRANSFORM_TIMEOUT_MS: "200", WAYPOST_TRANSFORM_MEMORY_MB: "64", WAYPOST_TRANSFORM_WORKERS: "3" }).transform,
  ).toEqual({ timeoutMs: 200, memoryMb: 64, workers: 3 });
  expect(() => loadConfig({ WAYPOST_TRANSFORM_TIMEOUT_MS: "0" })).toThrow(/WAYPOST_TRANSFORM_TIMEOUT_MS/);
  expect(() => loadConfig({ WAYPOST_TRANSFORM_MEMORY_MB: "lots" })).toThrow(/WAYPOST_TRANSFORM_MEMORY_MB/);
  expect(() => loadConfig({ WAYPOST_TRANSFORM_WORKERS: "0" })).toThrow(/WAYPOST_TRANSFORM_WORKERS/);
});

test("tracing is on when an OTLP endpoint is set: the traces URL as OpenTelemetry derives it", () => {
  expect(loadConfig({}).tracing.tracesUrl).toBeUndefined();
  expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }).tracing.tracesUrl).toBe("http://collector:4318/v1/traces");
  expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel.example.com/otlp/" }).tracing.tracesUrl).toBe(
    "https://otel.example.com/otlp/v1/traces",
  );
  // The signal-specific variable is used as it is, and wins.
  expect(
    loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:4318/custom" }).tracing
      .tracesUrl,
  ).toBe("http://b:4318/custom");
  expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_SDK_DISABLED: "true" }).tracing.tracesUrl).toBeUndefined();
  expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
  expect(() => loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "not a url" })).toThrow(ConfigError);
  // Protobuf unless told otherwise; grpc is refused, naming the variable.
  expect(loadConfig({}).tracing.protocol).toBe("http/protobuf");
  expect(loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }).tracing.protocol).toBe("http/json");
  expect(
    loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf" }).tracing.protocol,
  ).toBe("http/protobuf");
  expect(() => loadConfig({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc" })).toThrow(/OTEL_EXPORTER_OTLP_TRACES_PROTOCOL/);
});

test("the embedded Postgres's port: a free one unless WAYPOST_EMBEDDED_POSTGRES_PORT is set, 1024 to 65535, not beside DATABASE_URL", () => {
  expect(loadConfig({}).embeddedPostgresPort).toBeUndefined();
  expect(loadConfig({ WAYPOST_EMBEDDED_POSTGRES_PORT: "" }).embeddedPostgresPort).toBeUndefined();
  expect(loadConfig({ WAYPOST_EMBEDDED_POSTGRES_PORT: "5433" }).embeddedPostgresPort).toBe(5433);
  for (const bad of ["0", "80", "65536", "54.3", "postgres"]) {
    const refusal = (() => {
      try {
        loadConfig({ WAYPOST_EMBEDDED_POSTGRES_PORT: bad });
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(ConfigError);
    expect((refusal as Error).message).toBe(
      `WAYPOST_EMBEDDED_POSTGRES_PORT must be an integer from 1024 to 65535, got ${JSON.stringify(bad)}`,
    );
  }
  expect(() => loadConfig({ WAYPOST_EMBEDDED_POSTGRES_PORT: "5433", DATABASE_URL: "postgres://u:p@db:5432/waypost" })).toThrow(
    "WAYPOST_EMBEDDED_POSTGRES_PORT is set but so is DATABASE_URL: the embedded Postgres runs only without DATABASE_URL; unset one of them",
  );
});
