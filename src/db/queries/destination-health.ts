import type { Queryable } from "../pool.js";

export type CircuitState = "closed" | "open" | "half_open";

/** A destination's circuit and back-off, as destination_health stores it (src/health/circuit.ts folds results into it). */
export interface HealthRow {
  destinationId: string;
  state: CircuitState;
  consecutiveFailures: number;
  firstFailureAt: Date | null;
  consecutive429s: number;
  openedAt: Date | null;
  cooldownMs: number | null;
  probeAt: Date | null;
  probeDeliveryId: string | null;
  probeUntil: Date | null;
  backoffUntil: Date | null;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  lastError: string | null;
  expiredUnreported: number;
  expiredReportedAt: Date | null;
}

/** A destination_health row as Postgres returns it. */
export interface HealthRecord {
  destination_id: string;
  state: HealthRow["state"];
  consecutive_failures: number;
  first_failure_at: Date | null;
  consecutive_429s: number;
  opened_at: Date | null;
  cooldown_ms: number | null;
  probe_at: Date | null;
  probe_delivery_id: string | null;
  probe_until: Date | null;
  backoff_until: Date | null;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  last_error: string | null;
  expired_unreported: number;
  expired_reported_at: Date | null;
}

export function fromRecord(r: HealthRecord): HealthRow {
  return {
    destinationId: r.destination_id,
    state: r.state,
    consecutiveFailures: r.consecutive_failures,
    firstFailureAt: r.first_failure_at,
    consecutive429s: r.consecutive_429s,
    openedAt: r.opened_at,
    cooldownMs: r.cooldown_ms,
    probeAt: r.probe_at,
    probeDeliveryId: r.probe_delivery_id,
    probeUntil: r.probe_until,
    backoffUntil: r.backoff_until,
    lastSuccessAt: r.last_success_at,
    lastFailureAt: r.last_failure_at,
    lastError: r.last_error,
    expiredUnreported: r.expired_unreported,
    expiredReportedAt: r.expired_reported_at,
  };
}

/**
 * The health rows of these destinations, locked until the transaction ends
 * (in id order, so two writers never deadlock). Missing rows are created
 * first: a lock on a row that does not exist yet would protect nothing.
 * Call inside a transaction.
 */
export async function lockHealthRows(tx: Queryable, destinationIds: readonly string[], now: Date): Promise<Map<string, HealthRow>> {
  const ids = [...new Set(destinationIds)].sort();
  const select = () =>
    tx.query<HealthRecord>({
      // Prepared, as this and writeHealthRows run in every completion batch.
      name: "waypost_lock_health_rows",
      text: "SELECT * FROM destination_health WHERE destination_id = ANY ($1::uuid[]) ORDER BY destination_id FOR UPDATE",
      values: [ids],
    });
  let result = await select();
  if (result.rows.length < ids.length) {
    const have = new Set(result.rows.map((r) => r.destination_id));
    await tx.query(
      `INSERT INTO destination_health (destination_id, updated_at)
       SELECT id, $2 FROM unnest($1::uuid[]) AS i(id) ORDER BY id ON CONFLICT DO NOTHING`,
      [ids.filter((id) => !have.has(id)), now],
    );
    result = await select();
  }
  return new Map(result.rows.map((r) => [r.destination_id, fromRecord(r)]));
}

/** Writes rows locked by lockHealthRows, in one statement. */
export async function writeHealthRows(tx: Queryable, rows: readonly HealthRow[], now: Date): Promise<void> {
  if (rows.length === 0) return;
  const column = <T>(pick: (row: HealthRow) => T) => rows.map(pick);
  await tx.query({
    name: "waypost_write_health_rows",
    text: `UPDATE destination_health h
        SET state = r.state, consecutive_failures = r.consecutive_failures, first_failure_at = r.first_failure_at,
            consecutive_429s = r.consecutive_429s, opened_at = r.opened_at, cooldown_ms = r.cooldown_ms,
            probe_at = r.probe_at, probe_delivery_id = r.probe_delivery_id, probe_until = r.probe_until,
            backoff_until = r.backoff_until, last_success_at = r.last_success_at, last_failure_at = r.last_failure_at,
            last_error = r.last_error, expired_unreported = r.expired_unreported, updated_at = $17
       FROM unnest($1::uuid[], $2::text[], $3::int[], $4::timestamptz[], $5::int[], $6::timestamptz[], $7::int[],
                   $8::timestamptz[], $9::bigint[], $10::timestamptz[], $11::timestamptz[], $12::timestamptz[],
                   $13::timestamptz[], $14::text[], $15::int[], $16::timestamptz[])
         AS r(destination_id, state, consecutive_failures, first_failure_at, consecutive_429s, opened_at, cooldown_ms,
              probe_at, probe_delivery_id, probe_until, backoff_until, last_success_at, last_failure_at, last_error,
              expired_unreported, expired_reported_at)
      WHERE h.destination_id = r.destination_id`,
    values: [
      column((r) => r.destinationId),
      column((r) => r.state),
      column((r) => r.consecutiveFailures),
      column((r) => r.firstFailureAt),
      column((r) => r.consecutive429s),
      column((r) => r.openedAt),
      column((r) => r.cooldownMs),
      column((r) => r.probeAt),
      column((r) => r.probeDeliveryId),
      column((r) => r.probeUntil),
      column((r) => r.backoffUntil),
      column((r) => r.lastSuccessAt),
      column((r) => r.lastFailureAt),
      column((r) => r.lastError),
      column((r) => r.expiredUnreported),
      column((r) => r.expiredReportedAt),
      now,
    ],
  });
}

/** An open circuit's next probe is due now, and any back-off ends (the endpoint changed). */
export async function probeNow(db: Queryable, destinationId: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE destination_health SET probe_at = CASE WHEN state = 'open' THEN least(probe_at, $2) ELSE probe_at END, backoff_until = NULL, updated_at = $2
      WHERE destination_id = $1`,
    [destinationId, now],
  );
}

/** Rows whose destination is gone (a result recorded while it was being deleted). */
export async function pruneOrphanHealthRows(db: Queryable): Promise<number> {
  const result = await db.query(
    "DELETE FROM destination_health h WHERE NOT EXISTS (SELECT 1 FROM destinations d WHERE d.id = h.destination_id)",
  );
  return result.rowCount ?? 0;
}

/** Every destination's circuit state, for the gauge every process keeps. */
export async function listCircuitStates(db: Queryable): Promise<Array<{ destinationId: string; open: boolean }>> {
  const result = await db.query<{ destination_id: string; state: string }>("SELECT destination_id, state FROM destination_health");
  return result.rows.map((r) => ({ destinationId: r.destination_id, open: r.state !== "closed" }));
}

/** A destination's deliveries expired since its last report (`since`; null: never reported). */
export interface ExpiredReport {
  destinationId: string;
  /** null: the destination is gone. */
  name: string | null;
  count: number;
  since: Date | null;
}

/**
 * Expired deliveries to report, at most once per `minIntervalMs` per
 * destination: the counts are taken (reset to 0) in the statement that
 * reads them, so of several processes exactly one reports each.
 */
export async function takeExpiredReports(db: Queryable, now: Date, minIntervalMs: number): Promise<ExpiredReport[]> {
  const result = await db.query<{ destination_id: string; name: string | null; count: number; since: Date | null }>(
    `WITH due AS (
       SELECT destination_id, expired_unreported, expired_reported_at FROM destination_health
        WHERE expired_unreported > 0
          AND (expired_reported_at IS NULL
               OR expired_reported_at <= $1::timestamptz - make_interval(secs => $2::double precision / 1000))
        FOR UPDATE SKIP LOCKED
     ), taken AS (
       UPDATE destination_health h SET expired_unreported = 0, expired_reported_at = $1
         FROM due WHERE h.destination_id = due.destination_id
       RETURNING h.destination_id, due.expired_unreported AS count, due.expired_reported_at AS since
     )
     SELECT t.destination_id, d.name, t.count, t.since FROM taken t LEFT JOIN destinations d ON d.id = t.destination_id`,
    [now, minIntervalMs],
  );
  return result.rows.map((r) => ({ destinationId: r.destination_id, name: r.name, count: r.count, since: r.since }));
}

/** Names for operator events (the destination may be gone: then it has none). */
export async function destinationNames(db: Queryable, ids: readonly string[]): Promise<Map<string, string>> {
  const result = await db.query<{ id: string; name: string }>("SELECT id, name FROM destinations WHERE id = ANY ($1::uuid[])", [ids]);
  return new Map(result.rows.map((r) => [r.id, r.name]));
}
