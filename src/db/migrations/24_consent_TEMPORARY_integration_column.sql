-- TEMPORARY (consent branch only): the integration settings column that the
-- integration kind's own migration adds. Routing reads it; this copy lets the
-- consent branch run before that migration is merged. Drop this file when
-- merging (the integration kind's migration replaces it).
ALTER TABLE destinations ADD COLUMN IF NOT EXISTS integration jsonb;
