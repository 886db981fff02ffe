-- Triggers move into the code, so the tables they sat on can be Citus
-- reference tables (which carry none) and the same statements run on one
-- Postgres and on Citus. Each one's work is now done by the statement, or
-- the transaction, that caused it:
-- - a destination's rate bucket is written with the destination;
-- - turning per-user ordering on keys the destination's queued deliveries in
--   the same transaction as the update;
-- - deleting a source deletes its messages, webhook requests and lease;
-- - deleting messages deletes their deliveries, attempts and fates.
DROP TRIGGER destinations_rate_bucket ON destinations;
DROP FUNCTION create_destination_rate_bucket();
DROP TRIGGER destinations_ordering_keys ON destinations;
DROP FUNCTION destinations_ordering_keys();
DROP TRIGGER sources_messages_cascade ON sources;
DROP FUNCTION sources_delete_messages();
DROP TRIGGER messages_deliveries_cascade ON messages;
DROP FUNCTION messages_delete_deliveries();
