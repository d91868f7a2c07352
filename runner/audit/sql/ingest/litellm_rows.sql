-- The rows of _shape from u (line, raw, blank, ok, is_object, x: the line parsed with the reader's record,
-- key_session, key_time, usage: [cached_tokens, cache_read_input_tokens, cache_creation_input_tokens] of the
-- call's usage object): not run alone, ingest/litellm.sql (line-exact) and the fast readers ingest/litellm_fast.sql
-- and ingest/litellm_fast_text.sql (DuckDB's JSON reader) include it after their u.
SELECT line, blank, ok, false AS skip,
  CASE
    WHEN x IS NULL THEN 'not a JSON object'
    WHEN x.call_type IS NULL AND x.prompt_tokens IS NULL THEN 'not a LiteLLM log line (no call_type, no prompt_tokens)'
    WHEN lower(x.status) = 'failure' THEN 'status failure: ' || coalesce(left(x.error_str, 200), '(no error_str)')
    WHEN lower(x.cache_hit) = 'true' THEN 'cache_hit: answered from LiteLLM''s response cache, no model call'
  END AS shape_reason,
  true AS includes_cache,
  x.prompt_tokens AS s_input, 'prompt_tokens' AS f_input,
  coalesce(usage[1], usage[2]) AS s_cached,
  CASE WHEN usage[1] IS NOT NULL THEN 'usage_object.prompt_tokens_details.cached_tokens'
       ELSE 'usage_object.cache_read_input_tokens' END AS f_cached,
  usage[3] AS s_write,
  'usage_object.cache_creation_input_tokens' AS f_write,
  x.completion_tokens AS s_output, 'completion_tokens' AS f_output,
  CASE WHEN kv_litellm_default_keys($session_keys, $time_keys) THEN coalesce(x.session_id, x.trace_id)
       ELSE key_session END AS s_session,
  CASE WHEN kv_litellm_default_keys($session_keys, $time_keys) THEN x.startTime ELSE key_time END AS s_start,
  x.endTime AS s_end,
  x.custom_llm_provider AS provider_name, x.model AS request_model, NULL AS response_model,
  CASE WHEN starts_with(x.messages, '[') THEN json_object('system', NULL, 'messages', x.messages) END AS content
FROM u
