-- The call log (docs/job-table.md, "The call log"): destinations of the
-- batching kinds read stored calls by a cursor instead of one queue row per
-- call.
--
-- A call's position in the log is (log_xid, id): the inserting
-- transaction's id and the row's. A reader reads only below the oldest
-- transaction still running (pg_snapshot_xmin), where no transaction can
-- still commit a call, so it never skips one committed late. Calls stored
-- before this migration have no position (NULL): they were routed per call
-- and are never read by a cursor. The default makes every later insert
-- carry one, whatever statement stores it (ingest, audience syncs, delete
-- notifications). A nullable column with a default added after it: no
-- rewrite of the table.
ALTER TABLE messages ADD COLUMN log_xid xid8;
ALTER TABLE messages ALTER COLUMN log_xid SET DEFAULT pg_current_xact_id();
CREATE INDEX messages_log_idx ON messages (source_id, log_xid, id) WHERE log_xid IS NOT NULL;

-- How a destination gets its calls: 'per_call' (a queue row per call at
-- ingest, as before) or 'log' (a cursor per source). Existing destinations
-- stay per call until the process moves them (at start, with the log on);
-- `log_since` is when that happened: calls received before it may have been
-- routed per call by a statement that read the old layout, and the loader
-- skips those that have a delivery row.
ALTER TABLE destinations
  ADD COLUMN delivery_layout text NOT NULL DEFAULT 'per_call' CHECK (delivery_layout IN ('per_call', 'log')),
  ADD COLUMN log_since timestamptz;

-- One cursor per destination on the log and source connected to it
-- ('live'), and one per backfill ('backfill:<job id>', bounded by `until`).
-- Held under a lease like a background job; every write of the holder is
-- fenced by `lease_token`.
CREATE TABLE log_cursors (
  destination_id uuid NOT NULL,
  source_id uuid NOT NULL,
  lane text NOT NULL DEFAULT 'live',
  -- The last position delivered past: the next batch starts after it.
  after_xid xid8 NOT NULL,
  after_id bigint NOT NULL DEFAULT 0,
  -- A backfill's end (inclusive); NULL for the live cursor.
  until_xid xid8,
  until_id bigint,
  -- When the cursor may be read again (a batch that failed as a whole waits here).
  run_at timestamptz NOT NULL DEFAULT now(),
  -- The batch at the head that failed as a whole: how often, since when, why.
  failures integer NOT NULL DEFAULT 0,
  first_failed_at timestamptz,
  last_error text,
  lease_token uuid,
  leased_until timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (destination_id, source_id, lane)
);
CREATE INDEX log_cursors_due_idx ON log_cursors (run_at);

-- Each batch a cursor delivered: the calls of its source in (from, to] that
-- have no exception row or fate of their own were delivered by it, in the
-- batch attempt `batch_attempt_id`. A call's delivery at a destination on
-- the log is read from here (db/queries/log-deliveries.ts). `finished_xid`
-- orders batches for the finish feed as it orders finished deliveries.
CREATE TABLE log_batches (
  destination_id uuid NOT NULL,
  source_id uuid NOT NULL,
  lane text NOT NULL,
  from_xid xid8 NOT NULL,
  from_id bigint NOT NULL,
  to_xid xid8 NOT NULL,
  to_id bigint NOT NULL,
  -- The calls read in the range, and how many of them the batch delivered
  -- (the rest were held back by routing, or are exceptions).
  calls integer NOT NULL,
  delivered integer NOT NULL,
  -- The delivery_batch_attempts row of the operation (NULL: nothing was sent).
  batch_attempt_id uuid,
  attempted_at timestamptz,
  finished_at timestamptz NOT NULL,
  finished_xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
  PRIMARY KEY (destination_id, source_id, to_xid, to_id, lane)
);
CREATE INDEX log_batches_finished_idx ON log_batches (destination_id, finished_at);
