-- The call log (docs/job-table.md, "The call log"): destinations of the
-- batching kinds read stored calls by a cursor instead of one queue row per
-- call.
--
-- Each call carries the id of the transaction that stored it (log_xid). A
-- cursor reads in bursts between two snapshots, as the finish feed does:
-- the calls whose transactions committed after the snapshot of its last
-- burst (`seen`: not visible in it) and before the snapshot it reads under
-- now (`up_to`: visible in it), in (log_xid, id) order. So a reader never
-- skips a call committed late (by a transaction that started early) and
-- never waits for a transaction it does not read (one open for minutes in
-- another database). Calls stored before this migration have no log_xid
-- (NULL): they were routed per call and are never read by a cursor. The
-- default gives every later insert one, whatever statement stores it
-- (ingest, audience syncs, delete notifications). A nullable column with a
-- default added after it: no rewrite of the table.
ALTER TABLE messages ADD COLUMN log_xid xid8;
ALTER TABLE messages ALTER COLUMN log_xid SET DEFAULT pg_current_xact_id();
CREATE INDEX messages_log_idx ON messages (source_id, log_xid, id) WHERE log_xid IS NOT NULL;

-- How a destination gets its calls: 'per_call' (a queue row per call at
-- ingest, as before) or 'log' (a cursor per source). Destinations start per
-- call; the process moves those of the batching kinds onto the log (with the
-- log on). `log_from` is the moving transaction's id: a statement that saw
-- the destination on the log got a later one, so its cursors start there.
-- `log_since` is when it moved: a call received before it may still have
-- been routed per call by a statement that read the old layout, and the
-- loader skips those that have a delivery row.
ALTER TABLE destinations
  ADD COLUMN delivery_layout text NOT NULL DEFAULT 'per_call' CHECK (delivery_layout IN ('per_call', 'log')),
  ADD COLUMN log_from xid8,
  ADD COLUMN log_since timestamptz;

-- The transaction that connected a source to a destination: a store that
-- saw the connection has a later transaction id, so a cursor made for the
-- connection starts here and misses none of its calls. Existing rows have
-- none (NULL): they were connected before any destination moved onto the
-- log, whose move (destinations.log_from) is where their cursors start. A
-- nullable column and then its default: no rewrite, nothing volatile
-- evaluated for existing rows (which Citus refuses on its tables).
ALTER TABLE destination_sources ADD COLUMN log_from xid8;
ALTER TABLE destination_sources ALTER COLUMN log_from SET DEFAULT pg_current_xact_id();

-- One cursor per destination on the log and source connected to it
-- ('live'); other lanes are for later readers of the same calls (a backfill).
-- Held under a lease like a background job; every write of the holder is
-- fenced by `holder` (the lease's token; named apart from the job table's
-- own lease_token, which only the job table's fence writes).
CREATE TABLE log_cursors (
  destination_id uuid NOT NULL,
  source_id uuid NOT NULL,
  lane text NOT NULL DEFAULT 'live',
  -- Calls visible in `seen` were read. A burst reads those visible in
  -- `up_to` (NULL between bursts: the next page takes a new snapshot) page
  -- by page, each past the last position delivered (after_xid, after_id).
  seen pg_snapshot NOT NULL,
  up_to pg_snapshot,
  after_xid xid8 NOT NULL DEFAULT '0',
  after_id bigint NOT NULL DEFAULT 0,
  -- When the cursor may be read again (a batch that failed as a whole waits
  -- here). A new cursor is due at once, whatever the reader's clock says.
  run_at timestamptz NOT NULL DEFAULT '-infinity',
  -- The batch at the head that failed as a whole: how often, since when, why.
  failures integer NOT NULL DEFAULT 0,
  first_failed_at timestamptz,
  last_error text,
  holder uuid,
  held_until timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (destination_id, source_id, lane)
);
CREATE INDEX log_cursors_due_idx ON log_cursors (run_at);

-- Each batch a cursor delivered: the calls of its source not visible in
-- `seen`, visible in `up_to` and in (from, to] by (log_xid, id), that have
-- no exception row or fate of their own, were delivered by it, in the batch
-- attempt `batch_attempt_id`. A call's delivery at a destination on the log
-- is read from here. `finished_xid` orders batches for the finish feed as
-- it orders finished deliveries.
CREATE TABLE log_batches (
  destination_id uuid NOT NULL,
  source_id uuid NOT NULL,
  lane text NOT NULL,
  seen pg_snapshot NOT NULL,
  up_to pg_snapshot NOT NULL,
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
  PRIMARY KEY (destination_id, source_id, to_xid, to_id, lane, finished_xid)
);
CREATE INDEX log_batches_finished_idx ON log_batches (destination_id, finished_at);
