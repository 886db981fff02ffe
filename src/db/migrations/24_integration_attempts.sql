-- Integrations: every request an action makes is an attempt, named by the
-- subscription whose action made it, with its method (NULL for every other
-- kind, and for an action that failed before making a request).
--
-- Both tables are partitioned by day: a column added to the parent is added
-- to every partition (the default one and each day's), and the partitions
-- waypost_create_day_partitions makes later take the parent's columns.
-- New nullable columns: no rewrite, safe beside an older Waypost during a
-- rolling upgrade (it writes none).
ALTER TABLE delivery_attempts ADD COLUMN subscription text, ADD COLUMN method text;
ALTER TABLE delivery_batch_attempts ADD COLUMN subscription text, ADD COLUMN method text;
