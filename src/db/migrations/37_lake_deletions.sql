-- Deletion requests reach lake files (docs/lakes.md#deletion-requests): one
-- background job per lake destination of the affected sources rewrites the
-- destination's files without the user's rows ('lake_deletion'), a page of
-- files at a time, leased and taken over like backfills and bulk retries.
ALTER TABLE background_jobs DROP CONSTRAINT background_jobs_kind_check;
ALTER TABLE background_jobs ADD CONSTRAINT background_jobs_kind_check
  CHECK (kind IN ('backfill', 'retry', 'lake_deletion'));

-- The deletion request a lake_deletion job works for (NULL for the other
-- kinds). No foreign key, as with destination_id: a job says what it did.
ALTER TABLE background_jobs ADD COLUMN deletion_request_id uuid;
CREATE INDEX background_jobs_deletion_request_idx ON background_jobs (deletion_request_id)
  WHERE deletion_request_id IS NOT NULL;

-- The lake jobs' final figures, frozen with the notifications' when the
-- request completes: ended jobs are purged after the retention period.
-- {"lakes", "lakesFailed", "filesScanned", "filesRewritten", "filesDeleted", "rowsDeleted"}
ALTER TABLE deletion_requests ADD COLUMN lake_progress jsonb;
