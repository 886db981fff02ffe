-- Deletion requests (docs/api.md#deletion-requests). The user's data is removed when the
-- request is created; what remains to follow is the delivery of its delete
-- notifications, which are ordinary messages of type 'delete'.

CREATE TABLE deletion_requests (
  id uuid PRIMARY KEY,
  user_id text NOT NULL,
  -- The affected sources as resolved at creation (every source, when the
  -- request named none). No foreign key: the record outlives a source.
  source_ids uuid[] NOT NULL,
  messages_deleted bigint NOT NULL CHECK (messages_deleted >= 0),
  notifications_total bigint NOT NULL CHECK (notifications_total >= 0),
  created_at timestamptz NOT NULL,
  -- Set, with the final figures, the first time every notification is seen
  -- in a final state: the notifications themselves are purged after the
  -- retention period, the figures must stay.
  completed_at timestamptz,
  notifications_delivered bigint,
  notifications_failed bigint
);

-- The delete notification messages of a request, one per affected source
-- with an enabled destination. No foreign key to messages: retention purges
-- them, and the link must not keep them (or block the purge).
CREATE TABLE deletion_request_messages (
  deletion_request_id uuid NOT NULL REFERENCES deletion_requests (id) ON DELETE CASCADE,
  message_pk bigint NOT NULL,
  PRIMARY KEY (deletion_request_id, message_pk)
);
