-- Claim by destination ("lanes"): the claim picks the destinations it may
-- take from first, then reads each one's oldest due deliveries through this
-- index, so a backlog of a destination it cannot take from (throttled, held,
-- disabled, at its room) is never read. It replaces deliveries_due_idx
-- (run_at alone), which nothing else needs: ingest still writes one index
-- entry per delivery for it. Unfinished rows only, as before; the lease
-- columns are not in it, so claiming stays a HOT update.
-- Built inside the migration's transaction (not CONCURRENTLY): it covers
-- only unfinished deliveries, so the lock is as short as the backlog.
CREATE INDEX deliveries_lane_idx ON deliveries (destination_id, run_at)
  WHERE status IN ('pending', 'retrying');
DROP INDEX deliveries_due_idx;
