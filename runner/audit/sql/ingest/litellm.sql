-- LiteLLM logs, one JSON object per line: the StandardLoggingPayload (what LiteLLM's logging callbacks and
-- bucket loggers write) or a row of its LiteLLM_SpendLogs table exported as JSON (same token fields; its
-- `metadata` may be a JSON string):
--   {"id" | "request_id", "trace_id", "session_id"?, "call_type", "status": "success" | "failure", "model",
--    "prompt_tokens", "completion_tokens", "total_tokens", "startTime", "endTime", "cache_hit",
--    "metadata": {"usage_object": {<OpenAI-style usage>}, ...}, "messages", "error_str", ...}
-- Documentation followed:
--   * docs.litellm.ai/docs/proxy/logging_spec (StandardLoggingPayload): prompt_tokens, completion_tokens,
--     startTime/endTime (Unix seconds as floats; spend-log rows hold timestamps), status, cache_hit,
--     trace_id "trace multiple LLM calls belonging to same overall request", metadata (StandardLoggingMetadata,
--     whose `usage_object` is the provider usage after LiteLLM's conversion).
--   * docs.litellm.ai/docs/completion/prompt_caching: LiteLLM follows the OpenAI usage format for every
--     provider: "prompt_tokens: These are all prompt tokens including cache-miss and cache-hit input tokens",
--     prompt_tokens_details.cached_tokens "tokens that were a cache-hit", cache_creation_input_tokens (Anthropic
--     only) "tokens that were written to cache". So input = prompt_tokens (it already holds cache reads AND,
--     being cache misses, cache writes); cached = usage_object.prompt_tokens_details.cached_tokens (else
--     usage_object.cache_read_input_tokens). The doc once said the opposite (BerriAI/litellm issue 15945:
--     "prompt_tokens incorrectly documented as non-cached tokens only"); the current text and the code agree
--     on "including".
--     Some LiteLLM versions left cache WRITES out of prompt_tokens (issue 15056 shows prompt_tokens 31 with
--     1,253 cache_creation_input_tokens). Such a line contradicts the documented convention and is rejected
--     (cached + writes > prompt_tokens), never guessed.
--   * docs.litellm.ai/docs/proxy/ui_logs_sessions: calls sharing `litellm_session_id` are one session; the
--     default session keys are session_id (spend-log column) then trace_id.
--   * status "failure" lines are rejects with LiteLLM's error_str; cache_hit = true means LiteLLM's own response
--     cache answered and no model ran, so the line is a reject rather than a call with a prefill.
-- Each line is parsed twice (kv_shape_lines); its metadata once more, as text (a spend-log row's metadata string
-- once again), every usage_object figure by one json_extract_string. A JSON leaf from json_transform is minified
-- JSON, so its first character is its type ('"' a string, '[' an array): no json_type parse.
-- Whether the keys are the shape's defaults (SHAPES in formats.py), which the parse below holds.
CREATE OR REPLACE TEMP MACRO kv_litellm_default_keys(session_keys, time_keys) AS
  session_keys = ['$.session_id', '$.trace_id'] AND time_keys = ['$.startTime'];

CREATE OR REPLACE TEMP TABLE _shape AS
WITH p AS (
  SELECT * FROM kv_shape_lines($session_keys, $time_keys, '{"call_type": "VARCHAR",
    "status": "VARCHAR", "model": "VARCHAR", "custom_llm_provider": "VARCHAR", "prompt_tokens": "VARCHAR",
    "completion_tokens": "VARCHAR", "endTime": "VARCHAR", "cache_hit": "VARCHAR", "error_str": "VARCHAR",
    "metadata": "JSON", "hidden_params": {"usage_object": "JSON"}, "messages": "JSON",
    "session_id": "VARCHAR", "trace_id": "VARCHAR", "startTime": "VARCHAR"}', kv_litellm_default_keys($session_keys, $time_keys))
),
m AS (  -- a spend-log row keeps metadata as JSON text
  SELECT *, CASE WHEN NOT starts_with(x.metadata, '"') THEN x.metadata
                 WHEN json_valid(json_extract_string(x.metadata, '$'))
                 THEN CAST(json_extract_string(x.metadata, '$') AS JSON) ELSE x.metadata END AS md
  FROM p
),
um AS (  -- metadata.usage_object (its text: NULL when absent or null) and its figures, in one parse
  SELECT *, CASE WHEN md IS NOT NULL THEN json_extract_string(md, ['$.usage_object',
              '$.usage_object.prompt_tokens_details.cached_tokens', '$.usage_object.cache_read_input_tokens',
              '$.usage_object.cache_creation_input_tokens']) END AS um
  FROM m
),
u AS (  -- [cached_tokens, cache_read_input_tokens, cache_creation_input_tokens] of the usage object: metadata's,
        -- else hidden_params'
  SELECT *, CASE WHEN um[1] IS NOT NULL THEN um[2:4]
                 WHEN kv_nn(x.hidden_params.usage_object) IS NOT NULL
                 THEN json_extract_string(x.hidden_params.usage_object, ['$.prompt_tokens_details.cached_tokens',
                        '$.cache_read_input_tokens', '$.cache_creation_input_tokens']) END AS usage
  FROM um
)
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
FROM u;
