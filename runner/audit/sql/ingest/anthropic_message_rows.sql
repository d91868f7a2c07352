-- The rows of _shape from o (line, raw, blank, ok, is_object, x: the line parsed with kv_anthropic_message_record,
-- msg: the Message within it, key_session, key_time): not run alone, ingest/anthropic_message.sql (line-exact)
-- and ingest/anthropic_message_fast.sql (DuckDB's JSON reader) include it after their o.
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
FROM j
