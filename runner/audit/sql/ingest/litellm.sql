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
{include:ingest/litellm_record};

CREATE OR REPLACE TEMP TABLE _shape AS
WITH p AS (
  SELECT * FROM kv_shape_lines($session_keys, $time_keys, kv_litellm_record(), kv_litellm_default_keys($session_keys, $time_keys))
),
{include:ingest/litellm_usage}
{include:ingest/litellm_rows};
