-- Message-broker destinations: AMQP (RabbitMQ) and NATS JetStream. Each kind
-- keeps its settings in a column of its own (amqp: {"url", "exchange",
-- "routingKey", "mandatory"}; nats: {"servers", "subject", "token", "user",
-- "password"}), the other kinds' columns empty.
ALTER TABLE destinations
  ADD COLUMN amqp jsonb,
  ADD COLUMN nats jsonb;

ALTER TABLE destinations DROP CONSTRAINT destinations_kind_check;
ALTER TABLE destinations ADD CONSTRAINT destinations_kind_check CHECK (kind IN ('webhook', 'postgres', 'amqp', 'nats'));

ALTER TABLE destinations DROP CONSTRAINT destinations_kind_settings_check;
ALTER TABLE destinations ADD CONSTRAINT destinations_kind_settings_check CHECK (
  jsonb_typeof(webhooks) = 'array' AND (
    (kind = 'webhook' AND jsonb_array_length(webhooks) BETWEEN 1 AND 5 AND postgres IS NULL AND amqp IS NULL AND nats IS NULL)
    OR (kind = 'postgres' AND jsonb_array_length(webhooks) = 0 AND jsonb_typeof(postgres) = 'object' AND amqp IS NULL AND nats IS NULL)
    OR (kind = 'amqp' AND jsonb_array_length(webhooks) = 0 AND postgres IS NULL AND jsonb_typeof(amqp) = 'object' AND nats IS NULL)
    OR (kind = 'nats' AND jsonb_array_length(webhooks) = 0 AND postgres IS NULL AND amqp IS NULL AND jsonb_typeof(nats) = 'object')
  )
);
