-- The fields a Message line is parsed into (kv_parse: json_transform, text leaves): one structure holding both a
-- Message's and a batch result line's. The line-exact reader (ingest/anthropic_message.sql) gives it to
-- kv_shape_lines, the fast one (ingest/anthropic_message_fast.sql) gives read_json the DuckDB type json_transform
-- makes of it.
CREATE OR REPLACE TEMP MACRO kv_anthropic_message_record() AS '{"type": "VARCHAR", "model": "VARCHAR",
    "error": {"type": "VARCHAR", "message": "VARCHAR"},
    "usage": {"input_tokens": "VARCHAR", "output_tokens": "VARCHAR", "cache_read_input_tokens": "VARCHAR",
              "cache_creation_input_tokens": "VARCHAR", "prompt_tokens": "VARCHAR"},
    "custom_id": "VARCHAR",
    "result": {"type": "VARCHAR", "error": {"error": {"type": "VARCHAR", "message": "VARCHAR"}},
      "message": {"type": "VARCHAR", "model": "VARCHAR", "error": {"type": "VARCHAR", "message": "VARCHAR"},
        "usage": {"input_tokens": "VARCHAR", "output_tokens": "VARCHAR", "cache_read_input_tokens": "VARCHAR",
                  "cache_creation_input_tokens": "VARCHAR", "prompt_tokens": "VARCHAR"}}}}';
