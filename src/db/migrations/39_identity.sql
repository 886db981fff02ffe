-- Identity resolution (docs/profiles.md): calls' identifiers linked into
-- profiles by a resolver that reads stored calls by cursor, as the call log's
-- loaders do, a page at a time under one lock (so two processes resolve as
-- one would, in the log's order).

-- A person. A merged profile keeps its row, pointing at the survivor
-- (flattened: always the live one), so an id once handed out still resolves.
-- traits: {key: {"value", "at", "messageId"}}, the latest call's value per
-- key. Room left on each page so a traits update can stay on it.
CREATE TABLE profiles (
  id uuid PRIMARY KEY,
  merged_into uuid,
  created_at timestamptz NOT NULL,
  traits jsonb NOT NULL DEFAULT '{}'
) WITH (fillfactor = 90);

-- A profile's figures, apart from its traits because every resolved call
-- updates them: a narrow row, indexed by its key alone, on pages with room
-- to spare, so the update is a heap-only one (no index entry, no new page)
-- and writes little WAL. On the profiles row, with its traits' GIN index,
-- each call cost a new row version, an entry in every index and most of a
-- full page image. event_counts: {event name, or "(page)" etc.: count}.
CREATE TABLE profile_figures (
  profile_id uuid PRIMARY KEY,
  first_seen timestamptz NOT NULL,
  last_seen timestamptz NOT NULL,
  calls bigint NOT NULL DEFAULT 0,
  event_counts jsonb NOT NULL DEFAULT '{}'
) WITH (fillfactor = 70);
CREATE INDEX profiles_merged_into_idx ON profiles (merged_into) WHERE merged_into IS NOT NULL;
CREATE INDEX profiles_traits_idx ON profiles USING gin (traits jsonb_path_ops) WHERE merged_into IS NULL;

-- Which live profile holds an identifier.
CREATE TABLE profile_identifiers (
  type text NOT NULL,
  value text NOT NULL,
  profile_id uuid NOT NULL,
  first_seen timestamptz NOT NULL,
  PRIMARY KEY (type, value)
);
CREATE INDEX profile_identifiers_profile_idx ON profile_identifiers (profile_id);
-- Search by prefix (SearchProfiles), whatever the database's collation.
CREATE INDEX profile_identifiers_prefix_idx ON profile_identifiers (value text_pattern_ops);

-- Each resolved call and the profile it was resolved to then: a timeline is
-- the calls of a profile and of every profile merged into it.
CREATE TABLE profile_calls (
  profile_id uuid NOT NULL,
  message_pk bigint NOT NULL,
  PRIMARY KEY (profile_id, message_pk)
);
CREATE INDEX profile_calls_message_idx ON profile_calls (message_pk);

-- What happened to a profile: made, merged with another, an identifier left
-- out by a rule (and why), deleted.
CREATE TABLE profile_history (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  profile_id uuid NOT NULL,
  at timestamptz NOT NULL,
  kind text NOT NULL CHECK (kind IN ('created', 'merged', 'left_out', 'deleted')),
  other_profile_id uuid,
  identifier_type text,
  identifier_value text,
  message_id text,
  reason text
);
CREATE INDEX profile_history_profile_idx ON profile_history (profile_id, id);

-- The resolver's place in each source's calls (a LogWindow of
-- db/call-log/log-read.ts). A source's cursor starts before its first call.
CREATE TABLE identity_cursors (
  source_id uuid PRIMARY KEY,
  seen pg_snapshot NOT NULL,
  up_to pg_snapshot,
  after_xid xid8 NOT NULL DEFAULT '0',
  after_id bigint NOT NULL DEFAULT 0
);

-- Identifiers of deleted profiles, and when, per source the deletion
-- request covered: a call of that source received before that and resolved
-- after (still in the resolver's backlog) is deleted too, so a later merge
-- never brings the person back. A request limited to some sources leaves
-- the other sources' calls alone, resolved late or not.
CREATE TABLE deleted_identifiers (
  type text NOT NULL,
  value text NOT NULL,
  source_id uuid NOT NULL,
  deleted_at timestamptz NOT NULL,
  PRIMARY KEY (type, value, source_id)
);

-- An audience or computed trait may list profiles instead of userIds.
ALTER TABLE audiences ADD COLUMN by_profile boolean NOT NULL DEFAULT false;

-- A destination may add context.profileId to what it sends.
ALTER TABLE destinations ADD COLUMN add_profile_id boolean NOT NULL DEFAULT false;

-- A deletion request names an identifier of any type (the person holding it
-- is forgotten whole); user_id holds its value, as before for a userId.
ALTER TABLE deletion_requests ADD COLUMN identifier_type text NOT NULL DEFAULT 'user_id';
