-- Flow control: a per-destination rate limit and per-user ordering.
-- Safe on tables with data: the new columns have constant defaults or none
-- (no table rewrite), and only unfinished deliveries are backfilled.

ALTER TABLE destinations
  ADD COLUMN max_requests_per_second integer NOT NULL DEFAULT 0
    CHECK (max_requests_per_second BETWEEN 0 AND 100000),
  ADD COLUMN ordering text NOT NULL DEFAULT 'none' CHECK (ordering IN ('none', 'per_user'));

-- The shared token bucket of a rate-limited destination, read and taken in
-- the claim statement under a row lock, so every worker process draws from
-- the same tokens. Its own table: the claim updates it often, and the
-- destinations row, which every claim reads, stays untouched.
CREATE TABLE destination_rate_buckets (
  destination_id uuid PRIMARY KEY REFERENCES destinations (id) ON DELETE CASCADE,
  tokens double precision NOT NULL,
  refilled_at timestamptz NOT NULL
) WITH (fillfactor = 50);

-- Every destination has its bucket, whichever way it was created. A new
-- bucket starts empty and fills at the destination's rate.
CREATE FUNCTION create_destination_rate_bucket() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO destination_rate_buckets (destination_id, tokens, refilled_at)
  VALUES (NEW.id, 0, NEW.created_at) ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
CREATE TRIGGER destinations_rate_bucket AFTER INSERT ON destinations
  FOR EACH ROW EXECUTE FUNCTION create_destination_rate_bucket();

INSERT INTO destination_rate_buckets (destination_id, tokens, refilled_at)
SELECT id, 0, now() FROM destinations;

-- The user a delivery is ordered by (userId, else anonymousId; NULL: not
-- ordered). Filled at enqueue whatever the destination's setting, so that
-- turning ordering on applies to deliveries already waiting.
ALTER TABLE deliveries ADD COLUMN ordering_key text;

UPDATE deliveries d
   SET ordering_key = coalesce(m.user_id, nullif(m.payload::jsonb ->> 'anonymousId', ''))
  FROM messages m
 WHERE m.id = d.message_pk AND d.status IN ('pending', 'retrying');

-- The claim's ordering rule: is there an unfinished delivery of the same
-- destination and user with a smaller id? One index probe per candidate.
-- Unfinished rows only, so the index stays as small as the backlog; the
-- lease columns are not in it, so claiming stays a HOT update.
CREATE INDEX deliveries_ordering_idx ON deliveries (destination_id, ordering_key, id)
  WHERE status IN ('pending', 'retrying') AND ordering_key IS NOT NULL;
