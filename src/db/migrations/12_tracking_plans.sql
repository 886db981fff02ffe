-- Tracking plans: one per source, and the violations calls showed against
-- it, aggregated by what went wrong where (src/plans/).
CREATE TABLE tracking_plans (
  source_id uuid PRIMARY KEY REFERENCES sources (id) ON DELETE CASCADE,
  -- The plan document as the operator set it (events, identify, group, page).
  plan jsonb NOT NULL,
  mode text NOT NULL CHECK (mode IN ('off', 'observe', 'omit', 'block')),
  -- Bumped on every change: the etag, and the version ingest caches by.
  revision integer NOT NULL DEFAULT 1,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- One row per kind of violation at one place: the counts are added up in
-- memory by each process and upserted here every second or so.
CREATE TABLE plan_violations (
  source_id uuid NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
  -- track, identify, group or page; event is the track event's name ('' for the others).
  call_type text NOT NULL,
  event text NOT NULL,
  -- Where in the call: 'properties.total', 'traits.plan', 'event'.
  path text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('unplanned_event', 'required_missing', 'wrong_type', 'unplanned_property', 'other')),
  count bigint NOT NULL,
  first_seen timestamptz NOT NULL,
  last_seen timestamptz NOT NULL,
  -- The problem as the validator put it, and one offending value (at most 200 characters).
  message text NOT NULL,
  example text NOT NULL,
  PRIMARY KEY (source_id, call_type, event, path, kind)
);
CREATE INDEX plan_violations_last_seen_idx ON plan_violations (source_id, last_seen);
