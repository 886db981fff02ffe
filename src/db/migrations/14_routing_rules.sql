-- Routing rules: which calls a destination gets (filter), what is removed
-- from the body (drop_fields) and how it is reshaped (transform). All three
-- are part of the settings the revision (the etag) covers.
ALTER TABLE destinations
  ADD COLUMN filter jsonb,
  ADD COLUMN drop_fields text[] NOT NULL DEFAULT '{}',
  ADD COLUMN transform text NOT NULL DEFAULT '';

-- Why a call got no delivery at a destination, decided when it was routed:
-- its filter turned the call away (or its transform returned null when the
-- delivery was sent), the destination was disabled, or the call's
-- integrations turned it off. Only those calls get a row, so routing with
-- no rules writes nothing here; a delivery, or no row for a destination that
-- did not exist or was not connected, tells the rest.
CREATE TABLE call_fates (
  message_pk bigint NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  destination_id uuid NOT NULL REFERENCES destinations (id) ON DELETE CASCADE,
  fate text NOT NULL CHECK (fate IN ('filtered', 'disabled', 'integrations_off')),
  -- With 'filtered': 'filter' or 'transform'.
  reason text CHECK ((fate = 'filtered') = (reason IS NOT NULL)),
  recorded_at timestamptz NOT NULL,
  PRIMARY KEY (message_pk, destination_id)
);
-- Filtered counts per destination and minute (stats), and a destination's deletion.
CREATE INDEX call_fates_destination_idx ON call_fates (destination_id, recorded_at);

-- Which settings an attempt was sent with, and the body it sent when the
-- rules changed it (NULL: the stored body, byte for byte).
ALTER TABLE delivery_attempts
  ADD COLUMN destination_revision integer,
  ADD COLUMN sent_body text;
