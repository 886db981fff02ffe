-- Webhook sources: a source either takes calls from programs with its write
-- key (sdk) or takes a SaaS tool's webhooks at POST /hooks/<token> (webhook).
-- A webhook source keeps its settings (verifier, secret, transform,
-- idempotency key, response, rate limit) as jsonb, and a hash of its
-- inbound URL's token.
ALTER TABLE sources
  ADD COLUMN kind text NOT NULL DEFAULT 'sdk' CHECK (kind IN ('sdk', 'webhook')),
  ADD COLUMN webhook jsonb,
  -- sha256 of the inbound URL's token; the token itself is never stored.
  ADD COLUMN hook_token_hash bytea UNIQUE,
  ADD CONSTRAINT sources_webhook_settings CHECK ((kind = 'webhook') = (webhook IS NOT NULL AND hook_token_hash IS NOT NULL));

-- Every request a webhook source accepted, stored before it is answered,
-- then turned into calls in order of receipt per source by any live
-- process (the one holding the source's lease in hook_source_leases).
CREATE TABLE hook_requests (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- No foreign key: the statement trigger of sources removes a deleted
  -- source's requests (as it does its messages).
  source_id uuid NOT NULL,
  received_at timestamptz NOT NULL,
  method text NOT NULL,
  query text NOT NULL DEFAULT '',
  content_type text NOT NULL DEFAULT '',
  -- The headers as received, minus Cookie, Authorization and X-Forwarded-*.
  headers jsonb NOT NULL,
  body bytea NOT NULL,
  -- What makes a resend a no-op (NULL: the source names none).
  idempotency_key text,
  status text NOT NULL CHECK (status IN ('pending', 'processed', 'failed', 'duplicate')),
  error text,
  -- The calls it made, by messageId.
  message_ids text[] NOT NULL DEFAULT '{}',
  attempts integer NOT NULL DEFAULT 0,
  processed_at timestamptz,
  -- W3C trace context of the request, carried to the calls it makes.
  traceparent text,
  tracestate text
);
-- Processing: a source's pending requests in order of receipt.
CREATE INDEX hook_requests_pending_idx ON hook_requests (source_id, id) WHERE status = 'pending';
-- ListHookRequests: a source's newest first; retention: the oldest.
CREATE INDEX hook_requests_source_idx ON hook_requests (source_id, received_at DESC, id DESC);
CREATE INDEX hook_requests_received_idx ON hook_requests (received_at);
-- A resend (same key) of a request already stored is a duplicate: only the first is processed.
CREATE UNIQUE INDEX hook_requests_idempotency_idx ON hook_requests (source_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL AND status <> 'duplicate';

-- Which process works a source's requests (one at a time, in order): a row
-- per webhook source with pending work, leased like background jobs.
CREATE TABLE hook_source_leases (
  source_id uuid PRIMARY KEY,
  lease_id uuid,
  lease_until timestamptz
);

-- A deleted source's requests and lease go with it, as its messages do.
CREATE OR REPLACE FUNCTION sources_delete_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A statement of its own, so a new snapshot: it sees the messages of a
  -- store that held the source's lock until it committed.
  DELETE FROM messages m USING gone g WHERE m.source_id = g.id;
  DELETE FROM hook_requests r USING gone g WHERE r.source_id = g.id;
  DELETE FROM hook_source_leases l USING gone g WHERE l.source_id = g.id;
  RETURN NULL;
END
$$;
