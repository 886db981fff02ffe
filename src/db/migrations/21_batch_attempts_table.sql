-- Attempts of batch operations (docs/job-table.md, "Batch attempts"): a
-- warehouse transaction, a broker's publish round, a batched POST carries
-- many calls, and its attempt is written once, not once per call.
--
--   delivery_batch_attempts  one row per batch operation and result (the
--                            calls of a plain batch share one row; a batch
--                            whose calls had different outcomes or errors
--                            has one row for each), partitioned by the UTC
--                            day it was made, like delivery_attempts.
--
-- Each delivery references its batch attempts from its own row: the row's
-- id and the delivery's attempt number, two arrays carried through retries,
-- the finish (queue to history) and replays (history to queue). Readers
-- list a delivery's attempts as its delivery_attempts rows and its
-- references, one list.
--
-- Safe beside an older Waypost during a rolling upgrade: new nullable
-- columns (no rewrite) and a new table; the older code writes no
-- references, and a delivery it finishes loses the references a newer
-- process gave it (its attempts stay counted in the stats).

CREATE TABLE delivery_batch_attempts (
  destination_id uuid NOT NULL,
  -- md5 of the batch's id, URL index, outcome and error, as a uuid: the
  -- completion statement derives it from each call's result, so calls of
  -- one result find one row whatever flush writes them.
  id uuid NOT NULL,
  -- The sender's id of the operation (one per POST, transaction, round).
  batch_id uuid NOT NULL,
  url_index integer NOT NULL,
  url text NOT NULL,
  attempted_at timestamptz NOT NULL,
  outcome attempt_outcome NOT NULL,
  status_code integer,
  error text,
  latency_ms integer NOT NULL,
  response_body text,
  destination_revision integer,
  -- How many calls the operation carried (the sender's count).
  calls integer NOT NULL,
  -- How many deliveries reference this row (completions whose lease held):
  -- the attempts it stands for in stats.
  deliveries integer NOT NULL,
  PRIMARY KEY (destination_id, id, attempted_at)
) PARTITION BY RANGE (attempted_at);
-- Attempts per minute and latency percentiles.
CREATE INDEX delivery_batch_attempts_time_idx ON delivery_batch_attempts (destination_id, attempted_at);
CREATE TABLE delivery_batch_attempts_default PARTITION OF delivery_batch_attempts DEFAULT;

-- The references: parallel arrays, NULL for a delivery with none.
ALTER TABLE delivery_queue ADD COLUMN batch_attempts uuid[], ADD COLUMN batch_attempt_numbers integer[];
ALTER TABLE delivery_history ADD COLUMN batch_attempts uuid[], ADD COLUMN batch_attempt_numbers integer[];

CREATE OR REPLACE VIEW deliveries AS
  SELECT destination_id, id, message_pk, source_id, status, run_at, created_at, attempt_count, lease_token,
         leased_until, lease_owner, first_attempt_at, earliest_attempt_at, NULL::timestamptz AS finalized_at,
         retry_urls, ordering_key, refused_completions, last_error, NULL::xid8 AS finished_xid,
         batch_attempts, batch_attempt_numbers
    FROM delivery_queue
  UNION ALL
  SELECT destination_id, id, message_pk, source_id, status, finalized_at AS run_at, created_at, attempt_count, lease_token,
         NULL::timestamptz, NULL::text, first_attempt_at, earliest_attempt_at, finalized_at,
         retry_urls, ordering_key, refused_completions, last_error, finished_xid,
         batch_attempts, batch_attempt_numbers
    FROM delivery_history;

-- The day partitions of the three tables (as before, with the batch
-- attempts' days).
CREATE OR REPLACE FUNCTION waypost_create_day_partitions(from_day date, to_day date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  day date;
  created integer := 0;
  parent text;
  name text;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('waypost_day_partitions'));
  FOR day IN SELECT generate_series(from_day, to_day, interval '1 day')::date LOOP
    FOREACH parent IN ARRAY ARRAY['delivery_history', 'delivery_attempts', 'delivery_batch_attempts'] LOOP
      name := parent || '_' || to_char(day, 'YYYYMMDD');
      CONTINUE WHEN to_regclass(name) IS NOT NULL;
      BEGIN
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', name, parent,
                       (day::timestamp AT TIME ZONE 'UTC'), ((day + 1)::timestamp AT TIME ZONE 'UTC'));
        created := created + 1;
      EXCEPTION WHEN check_violation THEN
        RAISE NOTICE 'partition % not created: the default partition holds rows of that day', name;
      END;
    END LOOP;
  END LOOP;
  RETURN created;
END
$$;

SELECT waypost_create_day_partitions((now() AT TIME ZONE 'UTC')::date, ((now() AT TIME ZONE 'UTC') + interval '3 days')::date);

-- Deleting messages deletes their deliveries, and with them the deliveries'
-- references to batch attempts (messages_delete_deliveries, unchanged). A
-- batch attempt row is shared by the calls of its operation and holds no
-- call's data (the operation's URL, outcome, error, latency and response):
-- one left without deliveries stays until retention drops its day.
