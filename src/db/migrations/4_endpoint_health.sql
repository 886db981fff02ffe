-- Endpoint health and Standard Webhooks signing secrets.
-- Both changes are safe on tables with data: a new table, and a column with
-- a constant default (no rewrite; the check scans the small destinations table).

-- Secrets signing the Standard Webhooks way: [{ "secret": "whsec_…",
-- "expiresAt": null | ISO time }]. A rotated-out secret gets an expiresAt
-- and is pruned once it has passed.
ALTER TABLE destinations
  ADD COLUMN signing_secrets jsonb NOT NULL DEFAULT '[]'::jsonb
    CHECK (jsonb_typeof(signing_secrets) = 'array');

-- One row per destination that has been attempted, shared by every worker
-- process, so that all of them hold back the same destinations. Written in
-- the transaction that records delivery results; read by the claim.
-- No foreign key: a result recorded while the destination is being deleted
-- must not fail the batch it is in; maintenance prunes rows left behind.
CREATE TABLE destination_health (
  destination_id uuid PRIMARY KEY,
  -- closed: deliveries flow. open: none is claimed until probe_at, then one
  -- probe. half_open: that probe is in flight (until probe_until, its lease).
  state text NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'half_open')),
  -- The current run of attempted deliveries that all failed retryably.
  consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
  first_failure_at timestamptz,
  -- The current run of 429 answers.
  consecutive_429s integer NOT NULL DEFAULT 0 CHECK (consecutive_429s >= 0),
  opened_at timestamptz,
  -- The cooldown before the next probe; doubles after each failed probe.
  cooldown_ms integer,
  probe_at timestamptz,
  probe_delivery_id bigint,
  probe_until timestamptz,
  -- Every delivery of the destination waits until then (Retry-After, 429s).
  backoff_until timestamptz,
  last_success_at timestamptz,
  last_failure_at timestamptz,
  last_error text,
  -- Deliveries expired since the last destination.deliveries_expired event.
  expired_unreported integer NOT NULL DEFAULT 0,
  expired_reported_at timestamptz,
  updated_at timestamptz NOT NULL,
  CONSTRAINT open_has_probe_time CHECK (state = 'closed' OR (probe_at IS NOT NULL AND cooldown_ms IS NOT NULL))
);
