-- Background jobs (backfills and bulk retries) live here, not in the process
-- that started them. A running job is worked by whichever process holds its
-- lease (lease_id, until lease_until); a process that dies leaves the lease
-- to run out, and any live worker takes the job over from its cursor. Each
-- page of work commits its deliveries together with the cursor and progress,
-- so a job continued elsewhere neither repeats nor skips a page.
CREATE TABLE background_jobs (
  id uuid PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('backfill', 'retry')),
  -- No foreign key: a job outlives its destination, to say why it stopped.
  destination_id uuid NOT NULL,
  state text NOT NULL CHECK (state IN ('running', 'done', 'cancelled', 'failed')),
  -- What the job does, fixed when it was asked for (the range, the filter).
  params jsonb NOT NULL,
  -- Where the next page starts; NULL before the first.
  cursor jsonb,
  -- Counters, written with each page (backfill: candidates, created,
  -- filtered; retry: matched, retried, notReplayable).
  progress jsonb NOT NULL,
  -- Why it ended, when cancelled or failed; the last error while running.
  error text,
  -- Consecutive pages that failed; the job fails at a limit.
  failures integer NOT NULL DEFAULT 0,
  lease_id uuid,
  lease_until timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  finished_at timestamptz,
  CHECK ((state = 'running') = (finished_at IS NULL))
);
-- The workers' claim: running jobs whose lease ran out (or never started).
CREATE INDEX background_jobs_running_idx ON background_jobs (created_at) WHERE state = 'running';
-- ListBackfills: a destination's newest first.
CREATE INDEX background_jobs_destination_idx ON background_jobs (destination_id, kind, created_at DESC);
