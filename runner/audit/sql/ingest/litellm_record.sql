-- The macros both readers of LiteLLM lines use (ingest/litellm.sql, line-exact, and ingest/litellm_fast.sql,
-- DuckDB's JSON reader): included by each.
-- Whether the keys are the shape's defaults (SHAPES in formats.py), which the parse below holds.
CREATE OR REPLACE TEMP MACRO kv_litellm_default_keys(session_keys, time_keys) AS
  session_keys = ['$.session_id', '$.trace_id'] AND time_keys = ['$.startTime'];

-- The fields each line is parsed into (kv_parse: json_transform, text and JSON leaves).
CREATE OR REPLACE TEMP MACRO kv_litellm_record() AS '{"call_type": "VARCHAR",
    "status": "VARCHAR", "model": "VARCHAR", "custom_llm_provider": "VARCHAR", "prompt_tokens": "VARCHAR",
    "completion_tokens": "VARCHAR", "endTime": "VARCHAR", "cache_hit": "VARCHAR", "error_str": "VARCHAR",
    "metadata": "JSON", "hidden_params": {"usage_object": "JSON"}, "messages": "JSON",
    "session_id": "VARCHAR", "trace_id": "VARCHAR", "startTime": "VARCHAR"}';

-- The fast reader's record (ingest/litellm_fast.sql): the same fields, but the three figures of
-- metadata.usage_object typed, so that DuckDB's reader hands them over in the one parse of the line (the line-exact
-- record keeps metadata as JSON text, parsed again, and a spend-log row's metadata string once more). A metadata
-- that is no object (a spend-log row's string) or has no usage_object reads as one without it: the fast reader
-- sends those lines to the line-exact one.
CREATE OR REPLACE TEMP MACRO kv_litellm_fast_record() AS '{"call_type": "VARCHAR",
    "status": "VARCHAR", "model": "VARCHAR", "custom_llm_provider": "VARCHAR", "prompt_tokens": "VARCHAR",
    "completion_tokens": "VARCHAR", "endTime": "VARCHAR", "cache_hit": "VARCHAR", "error_str": "VARCHAR",
    "metadata": {"usage_object": {"prompt_tokens_details": {"cached_tokens": "VARCHAR"},
                                  "cache_read_input_tokens": "VARCHAR", "cache_creation_input_tokens": "VARCHAR"}},
    "hidden_params": {"usage_object": "JSON"}, "messages": "JSON",
    "session_id": "VARCHAR", "trace_id": "VARCHAR", "startTime": "VARCHAR"}';

-- [cached_tokens, cache_read_input_tokens, cache_creation_input_tokens] of hidden_params' usage object (JSON text),
-- where metadata holds none: every LiteLLM reader takes them the same way.
CREATE OR REPLACE TEMP MACRO kv_litellm_hidden_usage(usage_object) AS
  CASE WHEN kv_nn(usage_object) IS NOT NULL
       THEN json_extract_string(usage_object, ['$.prompt_tokens_details.cached_tokens', '$.cache_read_input_tokens',
                                               '$.cache_creation_input_tokens']) END;
