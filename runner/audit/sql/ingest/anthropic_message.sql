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
CREATE OR REPLACE TEMP TABLE _shape AS
WITH o AS (
  SELECT *, CASE WHEN $root = '$' THEN x ELSE x.result.message END AS msg
  FROM kv_shape_lines($session_keys, $time_keys, '{"type": "VARCHAR", "model": "VARCHAR",
    "error": {"type": "VARCHAR", "message": "VARCHAR"},
    "usage": {"input_tokens": "VARCHAR", "output_tokens": "VARCHAR", "cache_read_input_tokens": "VARCHAR",
              "cache_creation_input_tokens": "VARCHAR", "prompt_tokens": "VARCHAR"},
    "custom_id": "VARCHAR",
    "result": {"type": "VARCHAR", "error": {"error": {"type": "VARCHAR", "message": "VARCHAR"}},
      "message": {"type": "VARCHAR", "model": "VARCHAR", "error": {"type": "VARCHAR", "message": "VARCHAR"},
        "usage": {"input_tokens": "VARCHAR", "output_tokens": "VARCHAR", "cache_read_input_tokens": "VARCHAR",
                  "cache_creation_input_tokens": "VARCHAR", "prompt_tokens": "VARCHAR"}}}}', false)
),
j AS (  -- b: the batch line (NULL for a bare Message); x: the Message (NULL where a batch line's is not an object)
  SELECT * EXCLUDE (x, msg), CASE WHEN $root <> '$' THEN x END AS b,
         CASE WHEN msg IS NULL THEN NULL  -- a CASE, not AND/OR: only a batch line's message is looked at again
              WHEN $root = '$' THEN {'type': msg.type, 'model': msg.model, 'error': msg.error, 'usage': msg.usage}
              WHEN json_type(json_extract(raw, $root)) = 'OBJECT'
              THEN {'type': msg.type, 'model': msg.model, 'error': msg.error, 'usage': msg.usage} END AS x
  FROM o
)
SELECT line, blank, ok, false AS skip,
  CASE
    WHEN NOT is_object THEN 'not a JSON object'
    WHEN $root <> '$' AND b.result.type IS NULL THEN 'not an Anthropic Message Batch result line (no result.type)'
    WHEN $root <> '$' AND b.result.type <> 'succeeded'
      THEN 'result ' || b.result.type || coalesce(': ' || b.result.error.error.type, '')
           || coalesce(': ' || b.result.error.error.message, '')
    WHEN x.type = 'error' THEN 'error response: ' || coalesce(x.error.type || ': ', '') || coalesce(x.error.message, '')
    WHEN x IS NULL THEN 'no Message object'
    WHEN x.type IS NOT NULL AND x.type <> 'message' THEN format('type is "{}", not a message', x.type)
    WHEN x.usage.prompt_tokens IS NOT NULL
      THEN 'OpenAI-style usage (prompt_tokens includes the cache) in an Anthropic Message: wrong --format?'
    WHEN x.usage IS NULL OR coalesce(x.usage.input_tokens, x.usage.output_tokens) IS NULL THEN 'message has no usage'
  END AS shape_reason,
  false AS includes_cache,
  x.usage.input_tokens AS s_input, 'usage.input_tokens' AS f_input,
  x.usage.cache_read_input_tokens AS s_cached, 'usage.cache_read_input_tokens' AS f_cached,
  x.usage.cache_creation_input_tokens AS s_write, 'usage.cache_creation_input_tokens' AS f_write,
  x.usage.output_tokens AS s_output, 'usage.output_tokens' AS f_output,
  key_session AS s_session, key_time AS s_start, NULL AS s_end,
  'anthropic' AS provider_name, NULL AS request_model, x.model AS response_model, CAST(NULL AS JSON) AS content
FROM j;
