-- Audiences and computed traits (docs/api.md#audiences-and-computed-traits) and their stored state: the
-- membership (or value per user) as of the last sync, which the next sync
-- is diffed against.

CREATE TABLE audiences (
  id uuid PRIMARY KEY,
  source_id uuid NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  -- The trait key of the identify calls: snake_case of the name.
  key text NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
  kind text NOT NULL CHECK (kind IN ('audience', 'computed_trait')),
  member_count bigint NOT NULL DEFAULT 0 CHECK (member_count >= 0),
  created_at timestamptz NOT NULL,
  last_synced_at timestamptz,
  -- Audiences and computed traits write the same traits object, so a key is
  -- unique per source across both kinds: two syncs must never overwrite
  -- each other's trait.
  UNIQUE (source_id, key)
);
CREATE INDEX audiences_created_idx ON audiences (created_at, id);

-- One row per member (audience: value is true) or per user with a value
-- (computed trait). The primary key serves the sync's merge join with the
-- staged membership and a deletion request's lookup by audience and user.
CREATE TABLE audience_members (
  audience_id uuid NOT NULL REFERENCES audiences (id) ON DELETE CASCADE,
  user_id text NOT NULL,
  value jsonb NOT NULL,
  PRIMARY KEY (audience_id, user_id)
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
