-- The rows of _shape from o (line, raw, blank, ok, is_object, x: the line parsed with kv_openai_object_record, obj:
-- the API object within it, key_session, key_time): not run alone, ingest/openai_object.sql (line-exact) and
-- ingest/openai_object_fast.sql (DuckDB's JSON reader) include it after their o.
k AS (  -- the session and time: from the parse where the keys are the shape's defaults, else by their paths
  SELECT *, CASE kv_openai_default_keys($root, $session_keys, $time_keys)
              WHEN 'chat' THEN coalesce(x.metadata.session_id, x.metadata.conversation_id)
              WHEN 'response' THEN coalesce(x.conversation.id, x.metadata.session_id, x.metadata.conversation_id, x.user)
              ELSE key_session END AS s_session,
            CASE kv_openai_default_keys($root, $session_keys, $time_keys)
              WHEN 'chat' THEN x.created WHEN 'response' THEN x.created_at ELSE key_time END AS s_start
  FROM o
),
j AS (  -- b: the batch line (NULL for a bare object); x: the API object
  SELECT * EXCLUDE (x, obj), CASE WHEN $root <> '$' THEN x END AS b,
         {'object': obj.object, 'status': obj.status, 'model': obj.model, 'error': obj.error, 'usage': obj.usage} AS x
  FROM k
)
SELECT line, blank, ok, false AS skip,
  CASE
    WHEN NOT is_object THEN 'not a JSON object'
    WHEN $root <> '$' AND b.custom_id IS NULL THEN 'not an OpenAI Batch output line (no custom_id)'
    WHEN b.error.code IS NOT NULL OR b.error.message IS NOT NULL
      THEN 'batch error ' || coalesce(b.error.code, '') || ': ' || coalesce(b.error.message, '')
    WHEN $root <> '$' AND b.response.status_code IS DISTINCT FROM '200'
      THEN 'status_code ' || coalesce(b.response.status_code, 'missing') || ': '
           || coalesce(b.response.body.error.message, '(no message)')
    WHEN CASE WHEN $root = '$' THEN false  -- a CASE, not AND: only a batch line's body is looked at again
              ELSE json_type(json_extract(raw, $root)) IS DISTINCT FROM 'OBJECT' END THEN 'no response object'
    WHEN x.status IN ('failed', 'cancelled')
      THEN 'response ' || x.status || ': ' || coalesce(x.error.code || ': ', '')
           || coalesce(x.error.message, '(no message)')
    WHEN x.error.message IS NOT NULL THEN 'error response: ' || coalesce(x.error.code || ': ', '') || x.error.message
    WHEN x.object IS NOT NULL AND x.object NOT IN ('chat.completion', 'response')
      THEN format('object is "{}", not a chat.completion or response', x.object)
    WHEN x.usage IS NULL OR coalesce(x.usage.prompt_tokens, x.usage.input_tokens, x.usage.completion_tokens,
                                     x.usage.output_tokens) IS NULL THEN 'response has no usage'
  END AS shape_reason,
  true AS includes_cache,
  coalesce(x.usage.prompt_tokens, x.usage.input_tokens) AS s_input,
  -- the field a missing count is named by: the one this object's kind uses (Chat: prompt_/completion_tokens)
  CASE WHEN x.usage.prompt_tokens IS NOT NULL THEN 'usage.prompt_tokens'
       WHEN x.usage.input_tokens IS NOT NULL OR x.object = 'response' THEN 'usage.input_tokens'
       ELSE 'usage.prompt_tokens' END AS f_input,
  coalesce(x.usage.prompt_tokens_details.cached_tokens, x.usage.input_tokens_details.cached_tokens) AS s_cached,
  CASE WHEN x.usage.prompt_tokens_details.cached_tokens IS NOT NULL THEN 'usage.prompt_tokens_details.cached_tokens'
       ELSE 'usage.input_tokens_details.cached_tokens' END AS f_cached,
  NULL AS s_write, NULL AS f_write,
  coalesce(x.usage.completion_tokens, x.usage.output_tokens) AS s_output,
  CASE WHEN x.usage.completion_tokens IS NOT NULL THEN 'usage.completion_tokens'
       WHEN x.usage.output_tokens IS NOT NULL OR x.object = 'response' THEN 'usage.output_tokens'
       ELSE 'usage.completion_tokens' END AS f_output,
  s_session, s_start, NULL AS s_end,
  'openai' AS provider_name, NULL AS request_model, x.model AS response_model, CAST(NULL AS JSON) AS content
FROM j
