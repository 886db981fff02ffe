import type { JsonObject } from "@bufbuild/protobuf";
import { createAuditLog, type AuditLog } from "./access/audit-log.js";
import { createCredentials, type Credentials } from "./access/credentials.js";
import type { AccessConfig } from "./access-config.js";
import { emptyCall } from "./calls/call.js";
import type { Clock } from "./clock.js";
import type { AuditEventRow } from "./db/queries/access/audit-events.js";
import { deleteEndedSessions } from "./db/queries/access/user-sessions.js";
import type { Queryable } from "./db/pool.js";
import type { Ingestor } from "./ingest/ingestor.js";
import type { Logger } from "./logger.js";

export interface AccessWing {
  credentials: Credentials;
  audit: AuditLog;
  /** Stops the hourly purge. */
  close(): void;
}

export interface AccessWingOptions {
  pool: Queryable;
  clock: Clock;
  logger: Logger;
  config: AccessConfig;
  adminToken: string;
  ingestor: Ingestor;
}

const purgeEveryMs = 60 * 60_000;

/**
 * Team access's parts every API process shares: credentials (admin token,
 * API tokens, sessions), the audit log (forwarded into a source when
 * WAYPOST_AUDIT_SOURCE_ID names one), and an hourly purge of the audit log
 * past its retention and of ended sessions.
 */
export function openAccessWing(options: AccessWingOptions): AccessWing {
  const { pool, clock, config } = options;
  const credentials = createCredentials({ pool, clock, adminToken: options.adminToken, sessions: config.sessions });
  const sourceId = config.auditSourceId;
  const audit = createAuditLog({
    pool,
    clock,
    logger: options.logger,
    forward: sourceId ? (event) => forwardAuditEvent(options.ingestor, sourceId, event) : undefined,
  });
  const purge = async () => {
    const now = clock.now();
    await audit.purge(config.auditRetentionMs);
    await deleteEndedSessions(pool, now, new Date(now.getTime() - config.sessions.idleMs));
  };
  const timer = setInterval(() => {
    purge().catch((error: unknown) => options.logger.warn({ err: error }, "audit log purge failed"));
  }, purgeEveryMs);
  timer.unref();
  return { credentials, audit, close: () => clearInterval(timer) };
}

/** An audit event as a track call ("Audit Event"), its messageId the event's, so a retry stores it once. */
async function forwardAuditEvent(ingestor: Ingestor, sourceId: string, event: AuditEventRow): Promise<void> {
  const properties: JsonObject = {
    action: event.action,
    actorKind: event.actor_kind,
    actorName: event.actor_name,
    targetKind: event.target_kind,
    targetId: event.target_id,
    outcome: event.outcome,
    requestId: event.request_id,
    clientAddress: event.client_address,
    userAgent: event.user_agent,
    ...(event.diff ? { diff: event.diff as JsonObject } : {}),
  };
  const result = await ingestor.ingest(sourceId, [
    {
      ...emptyCall("track"),
      messageId: `audit-${event.id}`,
      userId: event.actor_id,
      event: "Audit Event",
      timestamp: event.at,
      properties,
    },
  ]);
  if (result.rejected.length > 0) throw new Error(`the audit source refused the event: ${result.rejected[0]?.reason}`);
}
