-- Consent per destination: the categories a call's
-- context.consent.categoryPreferences must all grant (true) for the call to
-- be routed here, and whether a call that carries no preferences is held
-- back too. Part of the settings the revision (the etag) covers, and of the
-- routing ingest caches per destination and revision.
ALTER TABLE destinations
  ADD COLUMN consent_categories text[] NOT NULL DEFAULT '{}',
  ADD COLUMN require_consent boolean NOT NULL DEFAULT false;
