-- The fields an OpenAI envelope line is parsed into (kv_parse: json_transform, text leaves except the logged
-- messages), written once: the line-exact reader (ingest/openai.sql) parses each line with it, and the fast
-- reader (ingest/openai_fast.sql) gives read_json the DuckDB type json_transform makes of it.
CREATE OR REPLACE TEMP MACRO kv_openai_record() AS '{
    "session_id": "VARCHAR", "timestamp": "VARCHAR", "disconnected_at": "VARCHAR", "system_tokens": "VARCHAR",
    "request": {"model": "VARCHAR", "user": "VARCHAR", "messages": "JSON", "instructions": "JSON", "input": "JSON"},
    "response": {"type": "VARCHAR", "model": "VARCHAR",
                 "usage": {"prompt_tokens": "VARCHAR", "input_tokens": "VARCHAR", "completion_tokens": "VARCHAR",
                           "output_tokens": "VARCHAR", "cache_read_input_tokens": "VARCHAR",
                           "cache_creation_input_tokens": "VARCHAR",
                           "prompt_tokens_details": {"cached_tokens": "VARCHAR"},
                           "input_tokens_details": {"cached_tokens": "VARCHAR"}}}}';
