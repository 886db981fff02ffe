-- A delivery result the database refuses (a constraint, a trigger, bad data
-- in an attempt row) used to be dropped and its lease left to run out, so the
-- delivery was sent again after every lease, with nothing recorded. Now each
-- refusal is counted on the delivery with the database's error, and after a
-- few of them the delivery is failed with that error
-- (src/db/job-table/refuse.ts). Neither column is indexed: writing them
-- stays a HOT update.
ALTER TABLE deliveries
  ADD COLUMN refused_completions integer NOT NULL DEFAULT 0,
  ADD COLUMN last_error text;
