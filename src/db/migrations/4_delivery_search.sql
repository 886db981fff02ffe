-- Finding deliveries on a job table of millions of rows: by destination and
-- creation time, as they finish (the finish feed), and per-minute figures.
-- Messages are found by messageId and userId through their own indexes
-- (source_id, message_id) and (source_id, user_id), then their deliveries
-- through deliveries_message_idx.

-- The transaction that moved a delivery into (or out of) a final state. A
-- reader that remembers its last snapshot (pg_current_snapshot()) asks for
-- the rows whose finished_xid that snapshot did not see: each finish is seen
-- exactly once, whatever the order in which transactions commit, and with no
-- clock involved. Set by a trigger, so every path that finishes a delivery
-- (completion, cancellation, expiry, replay) is covered. The trigger only
-- runs when the status changes, so claims stay HOT updates.
ALTER TABLE deliveries ADD COLUMN finished_xid xid8;

CREATE FUNCTION deliveries_mark_finished() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status IN ('pending', 'retrying') THEN
    NEW.finished_xid := NULL;
  ELSE
    NEW.finished_xid := pg_current_xact_id();
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER deliveries_finished BEFORE UPDATE OF status ON deliveries
  FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status)
  EXECUTE FUNCTION deliveries_mark_finished();

-- Listing newest first, with since/until on the creation time.
CREATE INDEX deliveries_destination_created_idx ON deliveries (destination_id, created_at, id);
-- The finish feed.
CREATE INDEX deliveries_destination_finished_xid_idx ON deliveries (destination_id, finished_xid)
  WHERE finished_xid IS NOT NULL;
-- Finals per minute and per hour (stats).
CREATE INDEX deliveries_destination_finalized_idx ON deliveries (destination_id, finalized_at)
  WHERE finalized_at IS NOT NULL;
-- Attempts per minute and latency percentiles (stats).
CREATE INDEX delivery_attempts_destination_time_idx ON delivery_attempts (destination_id, attempted_at);
