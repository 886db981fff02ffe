-- A warehouse load's values not stored in their columns (a type mismatch
-- stored as NULL, a column past the cap), per attempt: GetDestinationStats
-- sums them. NULL when there were none (every webhook attempt).
ALTER TABLE delivery_attempts ADD COLUMN discarded_values int;

-- The client's own send time (`sentAt` of the tracking API), when it gave
-- one: a warehouse's sent_at column. NULL when it did not.
ALTER TABLE messages ADD COLUMN sent_at timestamptz;
