-- The job table split in two (docs/job-table.md):
--
--   delivery_queue     the deliveries being worked (pending, retrying): only
--                      what the claim, the fence, ordering and flow control
--                      need, and only their three indexes. Small: it holds
--                      the backlog, not the past.
--   delivery_history   finished deliveries, append-only, partitioned by the
--                      day they finished. A delivery leaves the queue and
--                      enters the history in the statement that finishes it.
--   delivery_attempts  every request, append-only, partitioned by the day
--                      it was made.
--
-- Retention drops whole days of history and attempts (DROP TABLE of a
-- partition: no DELETE, no vacuum). `deliveries` becomes a view over the
-- queue and the history, for readers.
--
-- Every key still starts with destination_id, so the tables can be
-- distributed by destination. Safe under concurrent starts: migrations run
-- one at a time under postgres-migrations' advisory lock, in one
-- transaction each.

ALTER TABLE deliveries RENAME TO deliveries_v1;
ALTER TABLE delivery_attempts RENAME TO delivery_attempts_v1;

-- Delivery ids go on from where the old table's identity left off.
CREATE SEQUENCE delivery_ids AS bigint;
SELECT setval('delivery_ids', coalesce((SELECT max(id) FROM deliveries_v1), 0) + 1, false);

CREATE TABLE delivery_queue (
  destination_id uuid NOT NULL,
  id bigint NOT NULL DEFAULT nextval('delivery_ids'),
  -- No foreign key: its check (an index probe and a row lock on the message
  -- for every delivery queued) was a large part of ingest's cost. Deleting
  -- messages deletes their queued deliveries explicitly (retention skips
  -- messages that still have some; a user's deletion removes them).
  message_pk bigint NOT NULL,
  source_id uuid NOT NULL,
  status delivery_status NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'retrying')),
  run_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  attempt_count integer NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
  lease_token integer NOT NULL DEFAULT 0,
  leased_until timestamptz,
  lease_owner text,
  first_attempt_at timestamptz,
  earliest_attempt_at timestamptz,
  -- URLs still to retry after a partial failure; NULL means every webhook.
  retry_urls text[],
  ordering_key text,
  refused_completions integer NOT NULL DEFAULT 0,
  last_error text,
  PRIMARY KEY (destination_id, id)
) WITH (
  fillfactor = 80,
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_cost_delay = 0,
  autovacuum_analyze_scale_factor = 0.02
);
-- The claim: each destination's oldest due deliveries. The lease columns are
-- in no index, so claims and heartbeats are HOT updates.
CREATE INDEX delivery_queue_lane_idx ON delivery_queue (destination_id, run_at);
-- Per-user ordering: an earlier unfinished delivery of the same user?
CREATE INDEX delivery_queue_ordering_idx ON delivery_queue (destination_id, ordering_key, id)
  WHERE ordering_key IS NOT NULL;

CREATE TABLE delivery_history (
  destination_id uuid NOT NULL,
  id bigint NOT NULL,
  message_pk bigint NOT NULL,
  source_id uuid NOT NULL,
  status delivery_status NOT NULL CHECK (status IN ('delivered', 'failed', 'expired', 'cancelled')),
  created_at timestamptz NOT NULL,
  finalized_at timestamptz NOT NULL,
  attempt_count integer NOT NULL CHECK (attempt_count >= 0),
  -- The token the delivery finished with: a replay puts it back in the
  -- queue with a later one.
  lease_token integer NOT NULL,
  first_attempt_at timestamptz,
  earliest_attempt_at timestamptz,
  retry_urls text[],
  -- Kept for a replay, which queues the delivery again in its user's order.
  ordering_key text,
  refused_completions integer NOT NULL DEFAULT 0,
  last_error text,
  -- The transaction that finished it: the finish feed reads it (see
  -- src/db/queries/delivery-search.ts).
  finished_xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
  PRIMARY KEY (destination_id, finalized_at, id)
) PARTITION BY RANGE (finalized_at);
-- Listing newest first (and bulk replay's walk), the finish feed, finding by
-- message and by id. The primary key serves the per-minute figures.
CREATE INDEX delivery_history_created_idx ON delivery_history (destination_id, created_at, id);
CREATE INDEX delivery_history_finished_xid_idx ON delivery_history (destination_id, finished_xid);
CREATE INDEX delivery_history_message_idx ON delivery_history (message_pk);
CREATE INDEX delivery_history_id_idx ON delivery_history (id);
-- Rows outside every day's partition (a clock far off): never refused.
CREATE TABLE delivery_history_default PARTITION OF delivery_history DEFAULT;

CREATE TABLE delivery_attempts (
  destination_id uuid NOT NULL,
  delivery_id bigint NOT NULL,
  attempt integer NOT NULL,
  url_index integer NOT NULL,
  url text NOT NULL,
  attempted_at timestamptz NOT NULL,
  outcome attempt_outcome NOT NULL,
  status_code integer,
  error text,
  latency_ms integer NOT NULL,
  response_body text,
  PRIMARY KEY (destination_id, delivery_id, attempt, url_index, attempted_at)
) PARTITION BY RANGE (attempted_at);
-- Attempts per minute and latency percentiles.
CREATE INDEX delivery_attempts_time_idx ON delivery_attempts (destination_id, attempted_at);
CREATE TABLE delivery_attempts_default PARTITION OF delivery_attempts DEFAULT;

-- Creates the day partitions of both tables covering [from_day, to_day]
-- (UTC days), those missing. Maintenance calls it ahead of time; two
-- processes calling it at once take turns on the advisory lock. A day whose
-- rows are already in the default partition is left there (creating it
-- would fail); retention deletes them from there.
CREATE FUNCTION waypost_create_day_partitions(from_day date, to_day date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  day date;
  created integer := 0;
  parent text;
  name text;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('waypost_day_partitions'));
  FOR day IN SELECT generate_series(from_day, to_day, interval '1 day')::date LOOP
    FOREACH parent IN ARRAY ARRAY['delivery_history', 'delivery_attempts'] LOOP
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

-- The days the old tables' finished rows need, up to a few days ahead; older
-- than 60 days (past any sensible retention) stays in the default partition.
SELECT waypost_create_day_partitions(
  greatest(least(coalesce((SELECT min(finalized_at) FROM deliveries_v1), now()),
                 coalesce((SELECT min(attempted_at) FROM delivery_attempts_v1), now())) AT TIME ZONE 'UTC',
           (now() AT TIME ZONE 'UTC') - interval '60 days')::date,
  ((now() AT TIME ZONE 'UTC') + interval '3 days')::date);

INSERT INTO delivery_queue (destination_id, id, message_pk, source_id, status, run_at, created_at, attempt_count,
                            lease_token, leased_until, lease_owner, first_attempt_at, earliest_attempt_at, retry_urls,
                            ordering_key, refused_completions, last_error)
SELECT destination_id, id, message_pk, source_id, status, run_at, created_at, attempt_count,
       lease_token, leased_until, lease_owner, first_attempt_at, earliest_attempt_at, retry_urls,
       ordering_key, refused_completions, last_error
  FROM deliveries_v1 WHERE status IN ('pending', 'retrying');

INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count,
                              lease_token, first_attempt_at, earliest_attempt_at, retry_urls, ordering_key,
                              refused_completions, last_error, finished_xid)
SELECT destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count,
       lease_token, first_attempt_at, earliest_attempt_at, retry_urls, ordering_key, refused_completions, last_error,
       coalesce(finished_xid, pg_current_xact_id())
  FROM deliveries_v1 WHERE status NOT IN ('pending', 'retrying');

INSERT INTO delivery_attempts SELECT * FROM delivery_attempts_v1;

DROP TABLE deliveries_v1, delivery_attempts_v1;
DROP FUNCTION deliveries_mark_finished(), deliveries_delete_attempts();

-- Every delivery, queued or finished, for readers (the API's searches, the
-- console, an operator's psql). Written only through src/db/job-table/.
CREATE VIEW deliveries AS
  SELECT destination_id, id, message_pk, source_id, status, run_at, created_at, attempt_count, lease_token,
         leased_until, lease_owner, first_attempt_at, earliest_attempt_at, NULL::timestamptz AS finalized_at,
         retry_urls, ordering_key, refused_completions, last_error, NULL::xid8 AS finished_xid
    FROM delivery_queue
  UNION ALL
  SELECT destination_id, id, message_pk, source_id, status, finalized_at AS run_at, created_at, attempt_count, lease_token,
         NULL::timestamptz, NULL::text, first_attempt_at, earliest_attempt_at, finalized_at,
         retry_urls, ordering_key, refused_completions, last_error, finished_xid
    FROM delivery_history;

-- Deleting messages (retention, a user's deletion, a deleted source's
-- cascade) takes their deliveries and those deliveries' attempts along, as
-- the foreign key's cascade did: once per statement, not per row.
-- Retention drops old history and attempts by partition before it deletes
-- messages, so this finds few finished deliveries then.
CREATE FUNCTION messages_delete_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH queued AS (
    DELETE FROM delivery_queue q USING gone g WHERE q.message_pk = g.id RETURNING q.destination_id, q.id
  ), finished AS (
    DELETE FROM delivery_history h USING gone g WHERE h.message_pk = g.id RETURNING h.destination_id, h.id
  ), deleted AS (
    SELECT * FROM queued UNION ALL SELECT * FROM finished
  )
  DELETE FROM delivery_attempts a USING deleted d WHERE a.destination_id = d.destination_id AND a.delivery_id = d.id;
  RETURN NULL;
END
$$;
CREATE TRIGGER messages_deliveries_cascade AFTER DELETE ON messages
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION messages_delete_deliveries();
