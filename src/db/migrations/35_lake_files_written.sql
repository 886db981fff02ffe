-- What each lake destination has written (the console's and the stats'
-- "files written"): totals since it was created and its last file, one row
-- per destination, updated once per flush.
CREATE TABLE lake_files_written (
  destination_id uuid PRIMARY KEY REFERENCES destinations (id) ON DELETE CASCADE,
  files bigint NOT NULL,
  rows bigint NOT NULL,
  bytes bigint NOT NULL,
  last_file text NOT NULL,
  last_file_rows bigint NOT NULL,
  last_file_bytes bigint NOT NULL,
  last_file_at timestamptz NOT NULL
);
