-- The core paths: no foreign-key check per stored message, and per-user
-- ordering keys only on deliveries of destinations that order.

-- messages.source_id was a foreign key to sources: Postgres probed the
-- sources key and locked the source's row once for every message stored.
-- Producers now lock the source once per statement (FOR KEY SHARE, which a
-- source's deletion waits for), and deleting sources deletes their messages
-- (and, through messages_deliveries_cascade, their deliveries and attempts)
-- once per statement, as the cascade did.
ALTER TABLE messages DROP CONSTRAINT messages_source_id_fkey;

CREATE FUNCTION sources_delete_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A statement of its own, so a new snapshot: it sees the messages of a
  -- store that held the source's lock until it committed.
  DELETE FROM messages m USING gone g WHERE m.source_id = g.id;
  RETURN NULL;
END
$$;
CREATE TRIGGER sources_messages_cascade AFTER DELETE ON sources
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION sources_delete_messages();

-- Ingest writes delivery_queue.ordering_key only for destinations with
-- per-user ordering. Turning ordering on gives the destination's queued
-- deliveries their keys, so it still applies to deliveries already waiting.
-- The lock waits for every transaction writing the queue (a store that read
-- the setting before this change) to commit, and holds new ones until this
-- one commits: a store starting after it takes its snapshot after the lock,
-- so it sees the new setting. Delivery ids (acceptance order) are unchanged.
CREATE FUNCTION destinations_ordering_keys() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE delivery_queue IN SHARE ROW EXCLUSIVE MODE;
  UPDATE delivery_queue q
     SET ordering_key = coalesce(nullif(m.user_id, ''), nullif(m.payload::json ->> 'anonymousId', ''))
    FROM messages m
   WHERE q.destination_id = NEW.id AND q.ordering_key IS NULL AND m.id = q.message_pk;
  RETURN NULL;
END
$$;
CREATE TRIGGER destinations_ordering_keys AFTER UPDATE OF ordering ON destinations
  FOR EACH ROW WHEN (NEW.ordering = 'per_user' AND OLD.ordering IS DISTINCT FROM 'per_user')
  EXECUTE FUNCTION destinations_ordering_keys();

-- Keys written before, on deliveries of destinations that do not order, are
-- left: the claim ignores them, and they leave the queue with their deliveries.
