-- Cheaper completions: each finished delivery used to pay for a row trigger
-- and, for its attempt row, a foreign-key check. Neither changes what is
-- stored or what is deleted with what.

-- finished_xid is now stamped by the job table's transitions themselves
-- (src/db/job-table/fence.ts sets it whenever they move the status). The
-- trigger stays for any other writer (a process of an older version during
-- a rolling upgrade, a hand-written UPDATE): it now runs only when the
-- status moved and the writer left finished_xid alone.
DROP TRIGGER deliveries_finished ON deliveries;
CREATE TRIGGER deliveries_finished BEFORE UPDATE OF status ON deliveries
  FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status AND NEW.finished_xid IS NOT DISTINCT FROM OLD.finished_xid)
  EXECUTE FUNCTION deliveries_mark_finished();

-- Attempt rows are written only by the completion statement, for the
-- deliveries it has just updated in the same statement, so the foreign key's
-- per-row check (a lookup and a key-share lock on the delivery) proved
-- nothing new. What it also did, deleting a delivery's attempts with it, a
-- row trigger now does, at the same cost per deleted delivery as the
-- cascade, and on no other path.
ALTER TABLE delivery_attempts DROP CONSTRAINT IF EXISTS delivery_attempts_destination_id_delivery_id_fkey;

CREATE FUNCTION deliveries_delete_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM delivery_attempts WHERE destination_id = OLD.destination_id AND delivery_id = OLD.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER deliveries_attempts_cascade AFTER DELETE ON deliveries
  FOR EACH ROW EXECUTE FUNCTION deliveries_delete_attempts();
