-- What a warehouse could not store of a call at a destination on the call
-- log (values kept in its waypost_discards table, and the note saying
-- which), as a per-call delivery keeps them on its attempt: the call's own
-- count and note beside the body it was sent as, and the batch attempt
-- row's total for the destination's stats.
--
-- New nullable columns: no rewrite, nothing an older Waypost reads or
-- writes (an older one still writes sent_body on every row it adds).
ALTER TABLE log_sent_bodies
  ALTER COLUMN sent_body DROP NOT NULL,
  ADD COLUMN discarded_values integer,
  ADD COLUMN response_body text;

ALTER TABLE delivery_batch_attempts ADD COLUMN discarded_values integer;
