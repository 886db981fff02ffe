-- Integration destinations: a vendor tool from the catalog Waypost hosts.
-- Their settings live in a column of their own (integration: {"slug",
-- "settings", "subscriptions"}; the settings hold the entry's secrets in the
-- clear, like the other kinds' credentials), the other kinds' columns empty.
ALTER TABLE destinations ADD COLUMN integration jsonb;

ALTER TABLE destinations DROP CONSTRAINT destinations_kind_check;
ALTER TABLE destinations ADD CONSTRAINT destinations_kind_check
  CHECK (kind IN ('webhook', 'postgres', 'amqp', 'nats', 'integration'));

ALTER TABLE destinations DROP CONSTRAINT destinations_kind_settings_check;
ALTER TABLE destinations ADD CONSTRAINT destinations_kind_settings_check CHECK (
  jsonb_typeof(webhooks) = 'array' AND (
    (kind = 'webhook' AND jsonb_array_length(webhooks) BETWEEN 1 AND 5
      AND postgres IS NULL AND amqp IS NULL AND nats IS NULL AND integration IS NULL)
    OR (kind = 'postgres' AND jsonb_array_length(webhooks) = 0 AND jsonb_typeof(postgres) = 'object'
      AND amqp IS NULL AND nats IS NULL AND integration IS NULL)
    OR (kind = 'amqp' AND jsonb_array_length(webhooks) = 0 AND postgres IS NULL AND jsonb_typeof(amqp) = 'object'
      AND nats IS NULL AND integration IS NULL)
    OR (kind = 'nats' AND jsonb_array_length(webhooks) = 0 AND postgres IS NULL AND amqp IS NULL
      AND jsonb_typeof(nats) = 'object' AND integration IS NULL)
    OR (kind = 'integration' AND jsonb_array_length(webhooks) = 0 AND postgres IS NULL AND amqp IS NULL
      AND nats IS NULL AND jsonb_typeof(integration) = 'object')
  )
);
