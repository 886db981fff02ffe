/**
 * The claim's part of the circuit breaker and the destination-wide back-off,
 * as SQL fragments the claim statement splices in (kept here so the claim
 * itself changes by a few lines). `now` and `leaseMs` are the claim's
 * parameter placeholders.
 *
 * - held: destinations none of whose deliveries may be claimed now: backing
 *   off, open and not yet due for a probe, or with a probe in flight.
 * - probing: destinations due for a probe: open past probe_at, or half-open
 *   with a probe whose lease ran out. At most one delivery each.
 * - take probes: marks a probing destination half-open for the delivery
 *   chosen as its probe. The UPDATE re-checks its condition on the latest
 *   row version, so of two workers claiming at once only one gets the probe.
 */

/**
 * `destination` (an SQL expression), when given, narrows each fragment to
 * that one destination's health row, as the Citus driver's per-destination
 * claim needs (destination_health is distributed by destination).
 */
export function heldDestinationsSql(now: string, destination?: string): string {
  const held = `backoff_until > ${now}
              OR (state = 'open' AND probe_at > ${now})
              OR (state = 'half_open' AND probe_until > ${now})`;
  return `SELECT destination_id FROM destination_health
           WHERE ${destination === undefined ? held : `destination_id = ${destination} AND (${held})`}`;
}

function probeDueCondition(alias: string, now: string): string {
  return `(${alias}.backoff_until IS NULL OR ${alias}.backoff_until <= ${now})
          AND ((${alias}.state = 'open' AND ${alias}.probe_at <= ${now})
               OR (${alias}.state = 'half_open' AND ${alias}.probe_until <= ${now}))`;
}

export function probingDestinationsSql(now: string, destination?: string): string {
  return `SELECT h.destination_id FROM destination_health h WHERE ${scoped("h", destination)}${probeDueCondition("h", now)}`;
}

function scoped(alias: string, destination: string | undefined): string {
  return destination === undefined ? "" : `${alias}.destination_id = ${destination} AND `;
}

/** An UPDATE for a CTE: `chosen` must have (destination_id, id) with one row per probing destination. */
export function takeProbesSql(chosen: string, now: string, leaseMs: string, destination?: string): string {
  return `UPDATE destination_health h
             SET state = 'half_open', probe_delivery_id = c.id,
                 probe_until = ${now}::timestamptz + make_interval(secs => ${leaseMs}::double precision / 1000)
            FROM ${chosen} c
           WHERE h.destination_id = c.destination_id AND ${scoped("h", destination)}${probeDueCondition("h", now)}
          RETURNING h.destination_id, h.probe_delivery_id`;
}
