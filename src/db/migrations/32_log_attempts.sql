-- A call's attempts at a destination on the call log, as a delivery per
-- call lists them (docs/job-table.md, "What users see"): every operation
-- that carried it, in the order made, numbered by the try it was part of,
-- and the body it was sent as when the destination's rules changed it.
--
-- New nullable columns and a new table: no rewrite, nothing an older
-- Waypost reads or writes.

-- The tries of the page at a cursor's head that failed as a whole (a JSON
-- array, in the order made: {"row", "at", "n", "pks"}: a batch attempt row,
-- its time, the try's number, the calls it carried as text). The page's
-- calls list them before the try that records them; NULL when none.
ALTER TABLE log_cursors ADD COLUMN held_attempts jsonb;

-- A run whose calls had more than their delivering operation: its calls'
-- batch attempt rows and each one's try number, in the order made (the
-- delivering row among them), as delivery_queue's and delivery_history's
-- references; and when the first of them was made. NULL: the one attempt
-- batch_attempt_id, number 1.
ALTER TABLE log_batches
  ADD COLUMN batch_attempts uuid[], ADD COLUMN batch_attempt_numbers integer[], ADD COLUMN first_attempt_at timestamptz;

-- The calls a batch attempt row of a destination on the log carried (their
-- messages' ids): a call has no delivery id there until it fails alone, so
-- readers name each by its delivery at the destination (delivery_ids holds
-- per-call deliveries only).
ALTER TABLE delivery_batch_attempts ADD COLUMN call_pks bigint[];

-- The body a call at a destination on the log was last sent as, when the
-- destination's rules (dropped fields, a transform) changed it: what a
-- per-call delivery keeps as its attempt's sent_body. Deleted with the
-- message (message-removal.ts), as attempts are.
CREATE TABLE log_sent_bodies (
  message_pk bigint NOT NULL,
  destination_id uuid NOT NULL,
  sent_body text NOT NULL,
  PRIMARY KEY (message_pk, destination_id)
);
