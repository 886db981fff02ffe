-- What each attempt sent, for the kinds whose requests are not the stored
-- call (an integration's actions build their own): the request's headers
-- (secrets masked), its body (secrets masked, the first 64 KB) and the
-- body's full size in bytes. NULL for an attempt that stored none (a
-- webhook's body is the stored call or sent_body; its headers come from
-- its settings). A batch operation's request lives on its shared row.
--
-- New nullable columns: no rewrite, safe beside an older Waypost during a
-- rolling upgrade (it writes none). Added to the partitioned parents, so
-- every partition has them, and those made later take them.
ALTER TABLE delivery_attempts
  ADD COLUMN request_headers jsonb, ADD COLUMN request_body text, ADD COLUMN request_body_bytes integer;
ALTER TABLE delivery_batch_attempts
  ADD COLUMN request_headers jsonb, ADD COLUMN request_body text, ADD COLUMN request_body_bytes integer;
-- The deliveries a batch operation's row stands for (what `deliveries`
-- counts), so that a delivery's page can say which calls went with it.
-- Appended by each completion statement that references the row; NULL on
-- rows written before.
ALTER TABLE delivery_batch_attempts ADD COLUMN delivery_ids bigint[];

-- Held-back calls counted by reason in a destination's stats: the reason
-- rides in the fates' search index, so the count stays an index-only scan
-- of the same entries the filtered count read (one index, as before: ingest
-- writes no more). Built inside the migration's transaction: call_fates
-- holds only the calls routing held back, within the retention period.
CREATE INDEX call_fates_search_reason_idx ON call_fates (destination_id, fate, recorded_at, message_pk) INCLUDE (reason);
DROP INDEX call_fates_search_idx;
ALTER INDEX call_fates_search_reason_idx RENAME TO call_fates_search_idx;
