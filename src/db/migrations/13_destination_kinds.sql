-- Destination kinds. Every destination so far is a webhook destination; a
-- Postgres warehouse destination has its connection settings in `postgres`
-- ({"url", "schema"}) and no webhooks, so the 1-to-5-webhooks rule now
-- holds for webhook destinations only.
ALTER TABLE destinations
  ADD COLUMN kind text NOT NULL DEFAULT 'webhook' CHECK (kind IN ('webhook', 'postgres')),
  ADD COLUMN postgres jsonb;

ALTER TABLE destinations DROP CONSTRAINT destinations_webhooks_check;

ALTER TABLE destinations ADD CONSTRAINT destinations_kind_settings_check CHECK (
  jsonb_typeof(webhooks) = 'array' AND (
    (kind = 'webhook' AND jsonb_array_length(webhooks) BETWEEN 1 AND 5 AND postgres IS NULL)
    OR (kind = 'postgres' AND jsonb_array_length(webhooks) = 0 AND jsonb_typeof(postgres) = 'object')
  )
);
