-- Listing the calls a destination got no delivery for, by fate and newest
-- first (ListFates), pages through one fate at a time in this index's order;
-- it also serves what the index it replaces did (filtered counts per minute,
-- a destination's deletion), so fates cost ingest no more than before.
CREATE INDEX call_fates_search_idx ON call_fates (destination_id, fate, recorded_at, message_pk);
DROP INDEX call_fates_destination_idx;
