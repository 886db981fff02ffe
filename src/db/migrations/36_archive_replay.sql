-- Replays from a lake's archive (docs/lakes.md#replay): a backfill whose
-- calls are read from archive files, past retention.
--
-- A replayed call that is no longer in messages is stored again, under its
-- own messageId, source and received_at, tagged with the job that stored it
-- (NULL: ingested as usual). Nullable without a default: adding it rewrites
-- nothing.
ALTER TABLE messages ADD COLUMN replay_job uuid;

-- The calls a replay has seen, by (source, messageId): each is replayed at
-- most once per job, whatever reads it twice (a file listed twice, the same
-- call in two files, a page read again after the job was taken over). Written
-- in the page's transaction with the job's cursor; gone with the job's row
-- (its last page deletes them sooner).
CREATE TABLE archive_replay_seen (
  job_id uuid NOT NULL REFERENCES background_jobs (id) ON DELETE CASCADE,
  source_id uuid NOT NULL,
  message_id text NOT NULL,
  PRIMARY KEY (job_id, source_id, message_id)
);
