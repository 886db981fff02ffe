-- The W3C trace context a call came with (or, with tracing on, the context
-- of the span that accepted it), sent on every webhook request for the call.
-- NULL when there is none: nothing is written for calls without one, and
-- adding nullable columns without a default rewrites no rows.
ALTER TABLE messages
  ADD COLUMN traceparent text,
  ADD COLUMN tracestate text;
