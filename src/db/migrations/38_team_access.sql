-- Team access (docs/access.md): the people who signed in through the
-- identity provider, their console sessions, API tokens, and the audit log.
-- On Citus these stay on the coordinator: they are read there, a few rows
-- per admin request.

-- A person, keyed by the provider's issuer and subject (an email can change
-- hands; a subject cannot). role_from_claim: the role is set from the
-- provider's group claim at every sign-in, so changing it here is refused.
CREATE TABLE users (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  issuer text NOT NULL,
  subject text NOT NULL,
  email text NOT NULL,
  name text NOT NULL DEFAULT '',
  role text NOT NULL CHECK (role IN ('viewer', 'editor', 'admin', 'owner')),
  role_from_claim boolean NOT NULL DEFAULT false,
  -- NULL: every source.
  source_ids uuid[],
  disabled boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_sign_in_at timestamptz,
  UNIQUE (issuer, subject)
);

-- A console session: the cookie holds a random id, the row its sha256, so
-- a database dump opens no session. Ended by sign-out, revocation, idle
-- time (last_seen_at) or its absolute expiry.
CREATE TABLE user_sessions (
  id_hash bytea PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  csrf_token text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  client_address text NOT NULL DEFAULT '',
  user_agent text NOT NULL DEFAULT ''
);
CREATE INDEX user_sessions_user_idx ON user_sessions (user_id);

-- A sign-in under way: the PKCE verifier, state and nonce between the
-- redirect to the provider and its callback (minutes), and, for
-- `waypost login`, where the CLI collects its token.
CREATE TABLE sign_in_attempts (
  state text PRIMARY KEY,
  code_verifier text NOT NULL,
  nonce text NOT NULL,
  return_to text NOT NULL DEFAULT '/console/',
  -- The CLI's poll secret's sha256; NULL for a browser sign-in.
  cli_poll_hash bytea,
  -- Set by the callback for a CLI sign-in: the token the CLI collects once.
  cli_token text,
  cli_done boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);

-- API tokens. The secret is wpt_<random>_<crc32>; the row keeps its sha256
-- and its first characters (prefix), so a leaked token can be found.
CREATE TABLE api_tokens (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL,
  secret_hash bytea NOT NULL UNIQUE,
  prefix text NOT NULL,
  -- A role, or an explicit list of scopes.
  role text CHECK (role IN ('viewer', 'editor', 'admin', 'owner')),
  scopes text[] NOT NULL DEFAULT '{}',
  source_ids uuid[],
  -- NULL for a service account's token.
  user_id uuid REFERENCES users (id) ON DELETE CASCADE,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz,
  last_used_address text
);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id);

-- The audit log: append-only. Rows leave only through the retention purge,
-- which sets waypost.audit_purge for its own transaction (as does a forced
-- restore of a backup, which replaces every table, this one included).
CREATE TABLE audit_events (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  actor_kind text NOT NULL,
  actor_id text NOT NULL,
  actor_name text NOT NULL,
  action text NOT NULL,
  target_kind text NOT NULL DEFAULT '',
  target_id text NOT NULL DEFAULT '',
  diff jsonb,
  outcome text NOT NULL DEFAULT 'ok',
  request_id text NOT NULL DEFAULT '',
  client_address text NOT NULL DEFAULT '',
  user_agent text NOT NULL DEFAULT ''
);
CREATE INDEX audit_events_at_idx ON audit_events (at);
CREATE INDEX audit_events_actor_idx ON audit_events (actor_id, id);
CREATE INDEX audit_events_target_idx ON audit_events (target_id, id);

CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('DELETE', 'TRUNCATE') AND current_setting('waypost.audit_purge', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'the audit log is append-only (% refused)', TG_OP;
END;
$$;
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();
