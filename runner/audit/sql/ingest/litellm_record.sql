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
