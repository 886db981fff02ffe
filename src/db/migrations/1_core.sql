-- Sources, destinations, messages and the delivery job table.
-- Every job-table row carries destination_id, and every key on the job
-- tables starts with it, so the tables can be distributed by destination.

CREATE TABLE sources (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  -- sha256 of the write key; the key itself is never stored.
  write_key_hash bytea NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE destinations (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  enabled boolean NOT NULL,
  -- [{ "url": "...", "headers": { "k": "v" } }], 1 to 5 entries.
  webhooks jsonb NOT NULL CHECK (jsonb_typeof(webhooks) = 'array'
    AND jsonb_array_length(webhooks) BETWEEN 1 AND 5),
  shared_secret text,
  -- Bumped on every update: the etag, for optimistic concurrency.
  revision integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE destination_sources (
  source_id uuid NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
  destination_id uuid NOT NULL REFERENCES destinations (id) ON DELETE CASCADE,
  PRIMARY KEY (source_id, destination_id)
);
CREATE INDEX destination_sources_destination_idx ON destination_sources (destination_id);

-- One accepted call (or delete notification), stored once.
CREATE TABLE messages (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  source_id uuid NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
  message_id text NOT NULL,
  type text NOT NULL CHECK (type IN ('identify', 'track', 'page', 'screen', 'group', 'alias', 'delete')),
  user_id text,
  received_at timestamptz NOT NULL,
  -- The exact JSON body that is signed and sent.
  payload text NOT NULL,
  UNIQUE (source_id, message_id)
);
CREATE INDEX messages_user_idx ON messages (source_id, user_id) WHERE user_id IS NOT NULL;
CREATE INDEX messages_received_brin ON messages USING brin (received_at);

CREATE TYPE delivery_status AS ENUM ('pending', 'retrying', 'delivered', 'failed', 'expired', 'cancelled');

-- The job table. A due job has status pending or retrying, run_at <= now and
-- no live lease. A claim sets leased_until, a column no index covers, so
-- the claim is a HOT update (no index writes); a job whose worker died is
-- due again once leased_until passes. lease_token fences late completions.
CREATE TABLE deliveries (
  id bigint GENERATED ALWAYS AS IDENTITY,
  destination_id uuid NOT NULL,
  message_pk bigint NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  source_id uuid NOT NULL,
  status delivery_status NOT NULL DEFAULT 'pending',
  run_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  attempt_count integer NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
  lease_token integer NOT NULL DEFAULT 0,
  leased_until timestamptz,
  lease_owner text,
  first_attempt_at timestamptz,
  finalized_at timestamptz,
  -- URLs still to retry after a partial failure; NULL means every webhook.
  retry_urls text[],
  PRIMARY KEY (destination_id, id),
  CONSTRAINT finalized_iff_terminal CHECK (
    (status IN ('pending', 'retrying')) = (finalized_at IS NULL)
  )
) WITH (
  fillfactor = 80,
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_cost_delay = 0,
  autovacuum_analyze_scale_factor = 0.02
);
-- Exactly the claim query's predicate and order (the lease is checked on the
-- few leased rows at its head).
CREATE INDEX deliveries_due_idx ON deliveries (run_at) WHERE status IN ('pending', 'retrying');
CREATE INDEX deliveries_id_idx ON deliveries (id);
CREATE INDEX deliveries_message_idx ON deliveries (message_pk);
CREATE INDEX deliveries_created_brin ON deliveries USING brin (created_at);

CREATE TYPE attempt_outcome AS ENUM ('success', 'retryable', 'permanent', 'abandoned');

-- Every request to one URL (or refusal to send one) is a row.
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
  PRIMARY KEY (destination_id, delivery_id, attempt, url_index),
  FOREIGN KEY (destination_id, delivery_id) REFERENCES deliveries (destination_id, id) ON DELETE CASCADE
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);
CREATE INDEX delivery_attempts_time_brin ON delivery_attempts USING brin (attempted_at);
