-- Lake destinations: calls written as files (Parquet or gzipped NDJSON) into
-- object storage or a local directory (docs/lakes.md). Their settings live
-- in a column of their own (lake: {"url", "endpoint", "region",
-- "accessKeyId", "secretAccessKey", "format", "flushSeconds", "maxFileMb",
-- "archive"}; the secret in the clear, like the other kinds' credentials),
-- the other kinds' columns empty.
ALTER TABLE destinations ADD COLUMN lake jsonb;

ALTER TABLE destinations DROP CONSTRAINT destinations_kind_check;
ALTER TABLE destinations ADD CONSTRAINT destinations_kind_check
  CHECK (kind IN ('webhook', 'postgres', 'amqp', 'nats', 'integration', 'lake'));

ALTER TABLE destinations DROP CONSTRAINT destinations_kind_settings_check;
ALTER TABLE destinations ADD CONSTRAINT destinations_kind_settings_check CHECK (
  jsonb_typeof(webhooks) = 'array' AND (
    (kind = 'webhook' AND jsonb_array_length(webhooks) BETWEEN 1 AND 5
      AND postgres IS NULL AND amqp IS NULL AND nats IS NULL AND integration IS NULL AND lake IS NULL)
    OR (kind = 'postgres' AND jsonb_array_length(webhooks) = 0 AND jsonb_typeof(postgres) = 'object'
      AND amqp IS NULL AND nats IS NULL AND integration IS NULL AND lake IS NULL)
    OR (kind = 'amqp' AND jsonb_array_length(webhooks) = 0 AND postgres IS NULL AND jsonb_typeof(amqp) = 'object'
      AND nats IS NULL AND integration IS NULL AND lake IS NULL)
    OR (kind = 'nats' AND jsonb_array_length(webhooks) = 0 AND postgres IS NULL AND amqp IS NULL
      AND jsonb_typeof(nats) = 'object' AND integration IS NULL AND lake IS NULL)
    OR (kind = 'integration' AND jsonb_array_length(webhooks) = 0 AND postgres IS NULL AND amqp IS NULL
      AND nats IS NULL AND jsonb_typeof(integration) = 'object' AND lake IS NULL)
    OR (kind = 'lake' AND jsonb_array_length(webhooks) = 0 AND postgres IS NULL AND amqp IS NULL
      AND nats IS NULL AND integration IS NULL AND jsonb_typeof(lake) = 'object')
  )
);

-- The type of every column of a lake destination's tables: the first type a
-- column is written with is kept, in every later file (a value of another
-- type is written as null there), so a reader sees one schema across files.
CREATE TABLE lake_columns (
  destination_id uuid NOT NULL REFERENCES destinations (id) ON DELETE CASCADE,
  table_name text NOT NULL,
  column_name text NOT NULL,
  type text NOT NULL CHECK (type IN ('bigint', 'double', 'boolean', 'timestamp', 'text', 'json')),
  PRIMARY KEY (destination_id, table_name, column_name)
);
