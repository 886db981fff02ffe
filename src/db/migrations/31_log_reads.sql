-- Reads of the deliveries of destinations on the call log
-- (db/queries/log-deliveries.ts): their calls have no delivery row, so a
-- destination's list, newest created first, walks its sources' calls by
-- the time they were received (a per-call delivery's creation time), and
-- the finish feed walks its batches by the transaction that finished them,
-- as it walks delivery_history.
-- Calls with a log position only: those stored since migration 30, so,
-- shipped with it, the index is built over few rows inside the migration's
-- transaction.
CREATE INDEX messages_log_received_idx ON messages (source_id, received_at, id) WHERE log_xid IS NOT NULL;
CREATE INDEX log_batches_finished_xid_idx ON log_batches (destination_id, finished_xid);
