-- A delivery's first attempt, kept across replays. first_attempt_at is the
-- start of the retry window: the claim, the retry schedule and expiry read
-- it, and a replay clears it to give the delivery a fresh window. What the
-- API calls the first attempt is the first one ever made, so a replay now
-- moves first_attempt_at here (once: a second replay keeps the first value)
-- before clearing it. NULL when no replay has cleared first_attempt_at: it
-- is then the first attempt. Nullable without a default: adding it rewrites
-- nothing.
ALTER TABLE deliveries ADD COLUMN earliest_attempt_at timestamptz;
