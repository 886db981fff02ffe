import type { Clock } from "../clock.js";
import { type AuditEventRow, insertAuditEvent, purgeAuditEvents } from "../db/queries/access/audit-events.js";
import type { Queryable } from "../db/pool.js";
import type { Logger } from "../logger.js";
import type { Principal } from "./principal.js";

export interface AuditEntry {
  /** Who: a principal, or an anonymous caller (a failed sign-in) named as well as is known. */
  actor: Pick<Principal, "kind" | "id" | "name"> | { kind: "anonymous"; id: string; name: string };
  action: string;
  targetKind?: string;
  targetId?: string;
  diff?: Record<string, unknown> | null;
  outcome?: string;
  requestId?: string;
  clientAddress?: string;
  userAgent?: string;
}

export interface AuditLogOptions {
  pool: Queryable;
  clock: Clock;
  logger: Pick<Logger, "warn">;
  /** Also hands every written event on (WAYPOST_AUDIT_SOURCE_ID: into a source, as a call). */
  forward?: ((event: AuditEventRow) => Promise<void>) | undefined;
}

export interface AuditLog {
  /** Appends one event; resolves when it is stored. */
  record(entry: AuditEntry): Promise<AuditEventRow>;
  /** Removes events older than `retentionMs`, a batch at a time: how many went. */
  purge(retentionMs: number): Promise<number>;
}

/** The audit log: append-only rows in Postgres (the table refuses updates and deletes but the purge's). */
export function createAuditLog(options: AuditLogOptions): AuditLog {
  async function record(entry: AuditEntry): Promise<AuditEventRow> {
    const row = await insertAuditEvent(options.pool, {
      at: options.clock.now(),
      actor_kind: entry.actor.kind,
      actor_id: entry.actor.id,
      actor_name: entry.actor.name,
      action: entry.action,
      target_kind: entry.targetKind ?? "",
      target_id: entry.targetId ?? "",
      diff: entry.diff ?? null,
      outcome: entry.outcome ?? "ok",
      request_id: entry.requestId ?? "",
      client_address: entry.clientAddress ?? "",
      user_agent: entry.userAgent ?? "",
    });
    // Forwarding is a copy: the row is stored, so a failure here loses nothing of the log.
    await options
      .forward?.(row)
      .catch((error: unknown) => options.logger.warn({ err: error, action: row.action }, "audit event not forwarded"));
    return row;
  }

  async function purge(retentionMs: number): Promise<number> {
    const before = new Date(options.clock.now().getTime() - retentionMs);
    let total = 0;
    for (;;) {
      const removed = await purgeAuditEvents(options.pool, before, 5_000);
      total += removed;
      if (removed < 5_000) return total;
    }
  }

  return { record, purge };
}
