-- Bare Anthropic Message objects, one per line, and Anthropic Message Batch result lines. $root says where
-- the Message is:
--   anthropic-message  ($root = '$')               {"id", "type": "message", "role", "model", "content",
--                                                   "stop_reason", "usage": {"input_tokens", "output_tokens",
--                                                   "cache_creation_input_tokens", "cache_read_input_tokens"}}
--   anthropic-batch    ($root = '$.result.message')
--                      {"custom_id", "result": {"type": "succeeded", "message": <Message>}}
--                      or {"custom_id", "result": {"type": "errored", "error": {"type": "error", "error":
--                      {"type", "message"}}}}, {"result": {"type": "canceled"}}, {"result": {"type": "expired"}}
-- Documentation followed (Anthropic API reference: Messages, "Retrieve Message Batch results"; the
-- prompt-caching guide docs.anthropic.com/en/docs/build-with-claude/prompt-caching):
--   * usage.input_tokens counts only the tokens AFTER the last cache breakpoint: it EXCLUDES cache reads and
--     cache writes. The whole input is input_tokens + cache_read_input_tokens + cache_creation_input_tokens,
--     and the cached part is cache_read_input_tokens. Reading input_tokens as the total gives PCERs above
--     100%; forgetting the writes inflates PCER.
--   * A batch result whose result.type is not "succeeded" (errored, canceled, expired) is a reject with its
--     type and, for errors, the error's type and message. A Message carries no time and no session: give
--     --time-key / --session-key for fields your own logger added, else each call is its own session.
-- One row per line into _shape; sql/ingest/calls_from_usage.sql turns the texts into numbers and rejects.
-- Each line is parsed once into one structure that holds both a Message's fields and a batch result line's
-- (kv_shape_lines): the Message's fields are read from the top ($root = '$') or from result.message. Only a
-- batch line asks where its message is not an object (json_type, a third parse, rare).
{include:ingest/anthropic_message_record};

CREATE OR REPLACE TEMP TABLE _shape AS
WITH o AS (
  SELECT *, CASE WHEN $root = '$' THEN x ELSE x.result.message END AS msg
  FROM kv_shape_lines($session_keys, $time_keys, kv_anthropic_message_record(), false)
),
{include:ingest/anthropic_message_rows};
