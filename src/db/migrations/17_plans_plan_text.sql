-- A tracking plan's JSON text exactly as it was applied, so that reading it
-- back gives the same bytes (jsonb keeps neither key order nor spacing).
-- NULL for plans set before: they are read back from `plan`.
ALTER TABLE tracking_plans ADD COLUMN plan_text text;
