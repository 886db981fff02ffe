import { type AccessConfig, parseAccess } from "./access-config.js";
import { type IdentityConfig, parseIdentity } from "./identity-config.js";
import { availableParallelism } from "node:os";
import { signingSecretProblem } from "./signing/standard-webhooks.js";
import { defaultConnectionLimits, type ConnectionLimits } from "./http/connection-limits.js";
import { defaultBodyTiming, type BodyTiming } from "./http/request-body.js";
import { readFileSync } from "node:fs";
import {
  ConfigError,
  int,
  type NoProxyEntry,
  parseAllowPrivate,
  parseCallLog,
  parseTracing,
  parseJobTable,
  type JobTableConfig,
  parseCorsOrigins,
  parseNoProxy,
  parseProxyUrl,
  readExtraCaCerts,
} from "./config-values.js";

export { ConfigError, type JobTableConfig, type NoProxyEntry };

/**
 * Where outbound HTTP requests (webhooks, integrations, operator events) go
 * and what they trust; see docs/configuration.md#outbound-requests-proxies-and-trusted-cas.
 */
export interface OutboundConfig {
  /** The proxy of https:// requests (https_proxy, HTTPS_PROXY); undefined: direct. */
  httpsProxy: string | undefined;
  /** The proxy of http:// requests (http_proxy, HTTP_PROXY); undefined: direct. */
  httpProxy: string | undefined;
  /** Hosts reached directly although a proxy is set (no_proxy, NO_PROXY). */
  noProxy: NoProxyEntry[];
  /** Certificates (PEM) trusted beside the system roots (NODE_EXTRA_CA_CERTS's file); undefined: none. */
  extraCaCerts: string | undefined;
}

/** Which parts of Waypost a process runs. */
export type Role = "api" | "worker" | "all";

/** Tunables of the delivery loop; see src/delivery/loop.ts. */
export interface DeliveryConfig {
  /** Requests in flight across all destinations. */
  concurrency: number;
  /** Requests in flight to one destination. */
  perDestinationConcurrency: number;
  /** A claimed delivery's lease; after it another process may take it. */
  leaseMs: number;
  /** Poll interval when no NOTIFY wakes the loop. */
  pollIntervalMs: number;
  /** Time an endpoint has to answer. */
  timeoutMs: number;
  /**
   * Requests undici may queue on one keep-alive connection of a destination
   * (1: none). A queued POST is written once the answer before it is read.
   */
  pipelining: number;
  /** On stop, results not written by then are dropped (their leases expire). */
  shutdownTimeoutMs: number;
  /** First retry delay, doubling, capped, until the deadline. */
  retry: RetrySchedule;
  /** Outbound requests to private addresses are allowed. */
  allowPrivateDestinations: boolean;
  /** CIDR ranges allowed even when private addresses are not. */
  allowedCidrs: string[];
  /** Per-destination circuit breaker and back-off; see src/health/. */
  circuit: CircuitConfig;
  /** Batching of warehouse destinations; the defaults when absent. */
  warehouse?: WarehouseConfig | undefined;
  /** An integration's batch goes at the latest this long after its first call arrived (default 1000). */
  integrationFlushMs?: number | undefined;
  /**
   * Destinations of the batching kinds read calls from the call log by
   * cursor instead of a queue row per call (docs/job-table.md, "The call
   * log"); off: every destination per call. Never on Citus.
   */
  callLog?: boolean | undefined;
}

/** How warehouse destinations batch their loads. */
export interface WarehouseConfig {
  /** A batch is loaded at the latest this long after its first call arrived. */
  flushMs: number;
  /** ...or once it holds this many calls. */
  batchSize: number;
  /** Connections to one warehouse, per process. */
  connections: number;
  /** Columns per warehouse table at most (Postgres's own limit is 1,600); values past it go to the discards table. */
  maxColumns: number;
}

export const defaultWarehouseConfig: WarehouseConfig = { flushMs: 10_000, batchSize: 1_000, connections: 2, maxColumns: 1_000 };

/** When a failing destination's circuit opens, and how it is probed. */
export interface CircuitConfig {
  /** Consecutive retryable failures (attempted deliveries) that open the circuit. */
  failures: number;
  /** ...and the least time from the first to the last of them. */
  minSpanMs: number;
  /** Wait before the first probe; doubles after every failed probe... */
  cooldownMs: number;
  /** ...up to this. */
  maxCooldownMs: number;
  /** This many 429 answers in a row hold back the whole destination. */
  throttleAfter429s: number;
}

/** Where operator events (circuit opened/closed, deliveries expired) go. */
export interface OperatorWebhookConfig {
  url: string;
  /** whsec_…: events are signed the Standard Webhooks way. */
  secret: string;
}

export interface RetrySchedule {
  initialDelayMs: number;
  maxDelayMs: number;
  /** Retrying stops this long after the first attempt. */
  deadlineMs: number;
  /** 0..1: each wait is shortened by up to this fraction, at random. */
  jitter: number;
  /** Retry-After is honoured up to this. */
  maxRetryAfterMs: number;
}

export interface Config {
  port: number;
  host: string;
  role: Role;
  /** Unset: an embedded Postgres runs in dataDir. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** The embedded Postgres's port on 127.0.0.1; undefined: a free one, picked at each start. */
  embeddedPostgresPort: number | undefined;
  /** Unset: created on first start and kept in dataDir. */
  adminToken: string | undefined;
  logLevel: string;
  retentionMs: number;
  /** Origins allowed to call the tracking API from browsers; undefined: any. */
  corsOrigins: string[] | undefined;
  delivery: DeliveryConfig;
  outbound: OutboundConfig;
  /** After RotateSigningSecret, the previous secret keeps signing this long. */
  signingSecretOverlapMs: number;
  /** Sign-in, sessions, API tokens' limits and the audit log (docs/access.md). */
  access: AccessConfig;
  /** Identity resolution into profiles (docs/profiles.md). */
  identity: IdentityConfig;
  /** Unset: no operator events are sent (they are still logged). */
  operatorWebhook: OperatorWebhookConfig | undefined;
  /** Connection timeouts and cap of the listener (docs/limits.md). */
  connections: ConnectionLimits;
  /**
   * The deadline and minimum rate of a body read by hand (/v1, /hooks), else
   * 408 (docs/limits.md): clients post a few KB, so far shorter than the
   * listener's whole-body limit, which also covers streamed RPCs.
   */
  bodies: BodyTiming;
  /**
   * Ingest requests (Batch and the other TrackingService RPCs, /v1) decoded
   * and stored at once by this process; the rest wait with their bodies
   * unread, so admin requests are not queued behind all of them
   * (http/ingest-admission.ts). 0: no limit.
   */
  ingestConcurrency: number;
  /** Interval of the activity summary logged at info; 0 turns it off. */
  summaryIntervalMs: number;
  /** V8's semi-space cap in MB, applied by the entry (heap-settings.ts); validated here; 0: Node's default. */
  semiSpaceMb: number;
  /** DeliveryService's own database pool and bounds (docs/limits.md#admin-read-limits). */
  adminReads: AdminReadConfig;
  /** Limits of a destination's transform sandbox (docs/routing.md#transforms). */
  transform: TransformConfig;
  /** OpenTelemetry spans (docs/tracing.md). */
  tracing: TracingConfig;
  jobTable: JobTableConfig; // where the job table lives: docs/scaling.md#2-past-one-postgres-the-job-table-on-citus
}

export interface TransformConfig {
  /** Most time one call of a transform may run. */
  timeoutMs: number;
  /** Most memory one destination's transform sandbox may hold. */
  memoryMb: number;
  /** Worker threads running transform sandboxes (the machine's parallelism unless set). */
  workers: number;
}

/**
 * Whether, and where, spans are exported. Only the endpoint is read here;
 * the other OTEL_* variables (sampler, service name, headers, timeouts,
 * batch sizes) are read by the OpenTelemetry SDK itself.
 */
export interface TracingConfig {
  /** The OTLP/HTTP traces URL; undefined: tracing is off. */
  tracesUrl: string | undefined;
  /** The OTLP/HTTP encoding: protobuf (the OpenTelemetry default) or JSON. */
  protocol: "http/protobuf" | "http/json";
}

export interface AdminReadConfig {
  /** Connections of the pool admin reads use, apart from ingest and delivery. */
  connections: number;
  /** A statement, or a wait for one of those connections, is cut after this: deadline_exceeded. */
  statementTimeoutMs: number;
  /** A page of deliveries stops once the bodies it holds reach this many bytes. */
  maxResponseBytes: number;
}

export const defaultCircuitConfig: CircuitConfig = {
  failures: 20,
  minSpanMs: 60_000,
  cooldownMs: 30_000,
  maxCooldownMs: 10 * 60_000,
  throttleAfter429s: 3,
};

export const defaultRetrySchedule: RetrySchedule = {
  initialDelayMs: 10_000,
  maxDelayMs: 30 * 60_000,
  deadlineMs: 4 * 60 * 60_000,
  jitter: 0.2,
  maxRetryAfterMs: 30 * 60_000,
};

/** Reads and validates the environment once; errors name the variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const role = env.WAYPOST_ROLE ?? "all";
  if (role !== "api" && role !== "worker" && role !== "all") {
    throw new ConfigError(`WAYPOST_ROLE must be api, worker or all, got ${JSON.stringify(role)}`);
  }
  const adminToken = env.WAYPOST_ADMIN_TOKEN || undefined;
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new ConfigError("WAYPOST_ADMIN_TOKEN must be at least 16 characters long");
  }
  const allow = parseAllowPrivate(env.WAYPOST_ALLOW_PRIVATE_DESTINATIONS);
  const circuit = parseCircuit(env);
  const databaseUrl = parseDatabaseUrl(env.DATABASE_URL);
  return {
    port: int(env, "PORT", 8080, 0, 65535),
    // Loopback until told otherwise: a first start is not reachable from the
    // network. Containers set HOST=0.0.0.0.
    host: env.HOST || "127.0.0.1",
    role,
    databaseUrl,
    dataDir: env.WAYPOST_DATA_DIR || "./.waypost",
    embeddedPostgresPort: parseEmbeddedPostgresPort(env, databaseUrl),
    adminToken,
    logLevel: parseLogLevel(env.WAYPOST_LOG_LEVEL),
    retentionMs: int(env, "WAYPOST_RETENTION_DAYS", 7, 1, 3650) * 24 * 60 * 60_000,
    corsOrigins: parseCorsOrigins(env.WAYPOST_CORS_ORIGINS),
    delivery: {
      concurrency: int(env, "WAYPOST_DELIVERY_CONCURRENCY", 1024, 1, 10_000),
      perDestinationConcurrency: int(env, "WAYPOST_DESTINATION_CONCURRENCY", 64, 1, 10_000),
      leaseMs: int(env, "WAYPOST_LEASE_MS", 60_000, 1_000, 3_600_000),
      pollIntervalMs: int(env, "WAYPOST_POLL_INTERVAL_MS", 1_000, 10, 60_000),
      timeoutMs: int(env, "WAYPOST_ENDPOINT_TIMEOUT_MS", 5_000, 100, 60_000),
      pipelining: int(env, "WAYPOST_HTTP_PIPELINING", 1, 1, 16),
      callLog: parseCallLog(env.WAYPOST_CALL_LOG),
      shutdownTimeoutMs: int(env, "WAYPOST_SHUTDOWN_TIMEOUT_MS", 10_000, 0, 600_000),
      retry: defaultRetrySchedule,
      allowPrivateDestinations: allow.all,
      allowedCidrs: allow.cidrs,
      circuit,
      warehouse: {
        flushMs: int(env, "WAYPOST_WAREHOUSE_FLUSH_MS", defaultWarehouseConfig.flushMs, 0, 3_600_000),
        batchSize: int(env, "WAYPOST_WAREHOUSE_BATCH_SIZE", defaultWarehouseConfig.batchSize, 1, 100_000),
        connections: int(env, "WAYPOST_WAREHOUSE_CONNECTIONS", defaultWarehouseConfig.connections, 1, 100),
        maxColumns: int(env, "WAYPOST_WAREHOUSE_MAX_COLUMNS", defaultWarehouseConfig.maxColumns, 50, 1_500),
      },
      integrationFlushMs: int(env, "WAYPOST_INTEGRATION_FLUSH_MS", 1_000, 0, 3_600_000),
    },
    outbound: {
      httpsProxy: parseProxyUrl(env, "https_proxy", "HTTPS_PROXY"),
      httpProxy: parseProxyUrl(env, "http_proxy", "HTTP_PROXY"),
      noProxy: parseNoProxy(env),
      extraCaCerts: readExtraCaCerts(env, (file) => readFileSync(file, "utf8")),
    },
    signingSecretOverlapMs: int(env, "WAYPOST_SIGNING_SECRET_OVERLAP_MS", 24 * 3_600_000, 0, 30 * 24 * 3_600_000),
    access: parseAccess(env),
    identity: parseIdentity(env),
    operatorWebhook: parseOperatorWebhook(env),
    connections: {
      ...defaultConnectionLimits,
      maxConnections: int(env, "WAYPOST_MAX_CONNECTIONS", defaultConnectionLimits.maxConnections, 10, 1_000_000),
    },
    bodies: defaultBodyTiming,
    ingestConcurrency: int(env, "WAYPOST_INGEST_CONCURRENCY", 0, 0, 10_000),
    summaryIntervalMs: int(env, "WAYPOST_SUMMARY_INTERVAL_SECONDS", 60, 0, 86_400) * 1000,
    semiSpaceMb: int(env, "WAYPOST_SEMI_SPACE_MB", 16, 0, 1024),
    adminReads: {
      connections: int(env, "WAYPOST_ADMIN_READ_CONNECTIONS", 4, 1, 100),
      statementTimeoutMs: int(env, "WAYPOST_ADMIN_STATEMENT_TIMEOUT_MS", 15_000, 100, 600_000),
      maxResponseBytes: 4 * 1024 * 1024,
    },
    transform: {
      timeoutMs: int(env, "WAYPOST_TRANSFORM_TIMEOUT_MS", 50, 1, 10_000),
      memoryMb: int(env, "WAYPOST_TRANSFORM_MEMORY_MB", 32, 1, 1024),
      workers: int(env, "WAYPOST_TRANSFORM_WORKERS", availableParallelism(), 1, 64),
    },
    tracing: parseTracing(env),
    jobTable: parseJobTable(env),
  };
}

function parseCircuit(env: Record<string, string | undefined>): CircuitConfig {
  const cooldownMs = int(env, "WAYPOST_CIRCUIT_COOLDOWN_MS", defaultCircuitConfig.cooldownMs, 100, 3_600_000);
  const maxCooldownMs = int(env, "WAYPOST_CIRCUIT_MAX_COOLDOWN_MS", defaultCircuitConfig.maxCooldownMs, 100, 24 * 3_600_000);
  if (maxCooldownMs < cooldownMs) {
    throw new ConfigError(
      `WAYPOST_CIRCUIT_MAX_COOLDOWN_MS (${maxCooldownMs}) must not be less than WAYPOST_CIRCUIT_COOLDOWN_MS (${cooldownMs})`,
    );
  }
  return {
    failures: int(env, "WAYPOST_CIRCUIT_FAILURES", defaultCircuitConfig.failures, 1, 100_000),
    minSpanMs: int(env, "WAYPOST_CIRCUIT_MIN_SPAN_MS", defaultCircuitConfig.minSpanMs, 0, 24 * 3_600_000),
    cooldownMs,
    maxCooldownMs,
    throttleAfter429s: defaultCircuitConfig.throttleAfter429s,
  };
}

/** Both or neither: events are always signed. */
function parseOperatorWebhook(env: Record<string, string | undefined>): OperatorWebhookConfig | undefined {
  const url = env.WAYPOST_OPERATOR_WEBHOOK_URL || undefined;
  const secret = env.WAYPOST_OPERATOR_WEBHOOK_SECRET || undefined;
  if (!url) {
    if (secret) throw new ConfigError("WAYPOST_OPERATOR_WEBHOOK_SECRET is set but WAYPOST_OPERATOR_WEBHOOK_URL is not");
    return undefined;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(`WAYPOST_OPERATOR_WEBHOOK_URL must be an absolute http(s) URL, got ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new ConfigError(`WAYPOST_OPERATOR_WEBHOOK_URL must be an absolute http(s) URL, got ${JSON.stringify(url)}`);
  }
  if (!secret) throw new ConfigError("WAYPOST_OPERATOR_WEBHOOK_SECRET is required with WAYPOST_OPERATOR_WEBHOOK_URL (events are signed)");
  const problem = signingSecretProblem(secret);
  if (problem) throw new ConfigError(`WAYPOST_OPERATOR_WEBHOOK_SECRET ${problem}`);
  return { url: parsed.href, secret };
}

/** pino's levels: any other name makes pino throw with a stack trace that names no variable. */
export const logLevels = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

function parseLogLevel(raw: string | undefined): string {
  if (raw === undefined || raw === "") return "info";
  if (!(logLevels as readonly string[]).includes(raw)) {
    throw new ConfigError(`WAYPOST_LOG_LEVEL must be one of ${logLevels.join(", ")}, got ${JSON.stringify(raw)}`);
  }
  return raw;
}

/**
 * Postgres connection strings only: pg would take mysql://… and fail later,
 * talking to whatever answers, with a protocol error that names nothing.
 * The value itself is never echoed (it may hold a password), only its scheme.
 */
function parseDatabaseUrl(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === "") return undefined;
  // pg-connection-string's other forms: a Unix socket directory, or socket:/dir?db=name.
  if (raw.startsWith("/")) return raw;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(raw)?.[1]?.toLowerCase();
  if (scheme === "postgres" || scheme === "postgresql" || scheme === "socket") {
    if (URL.canParse(raw)) return raw;
    throw new ConfigError("DATABASE_URL is not a valid URL (a password with @, / or # must be percent-encoded)");
  }
  const example = "postgres://user:password@host:5432/database";
  throw new ConfigError(
    scheme === undefined
      ? `DATABASE_URL must be a Postgres URL like ${example}`
      : `DATABASE_URL must be a Postgres URL like ${example}, got a ${scheme}: URL (Waypost stores its data in Postgres only)`,
  );
}

/**
 * A fixed port for the embedded Postgres (to reach it with psql or pg_dump at
 * a known address). Not below 1024: Postgres runs unprivileged. With
 * DATABASE_URL there is no embedded Postgres, and a port set for it is a
 * mistake worth naming rather than ignoring.
 */
function parseEmbeddedPostgresPort(env: Record<string, string | undefined>, databaseUrl: string | undefined): number | undefined {
  const name = "WAYPOST_EMBEDDED_POSTGRES_PORT";
  if (env[name] === undefined || env[name] === "") return undefined;
  if (databaseUrl !== undefined) {
    throw new ConfigError(`${name} is set but so is DATABASE_URL: the embedded Postgres runs only without DATABASE_URL; unset one of them`);
  }
  return int(env, name, 0, 1024, 65535);
}
