-- The macros both readers of bare OpenAI API objects use (ingest/openai_object.sql, line-exact, and
-- ingest/openai_object_fast.sql, DuckDB's JSON reader): included by each.
-- Which shape's default keys (SHAPES in formats.py) the reader was given: 'chat', 'response', or NULL (a batch
-- line, or keys of the user's own: read by their paths).
CREATE OR REPLACE TEMP MACRO kv_openai_default_keys(root, session_keys, time_keys) AS
  CASE WHEN root <> '$' THEN NULL
       WHEN session_keys = ['$.metadata.session_id', '$.metadata.conversation_id'] AND time_keys = ['$.created']
         THEN 'chat'
       WHEN session_keys = ['$.conversation.id', '$.metadata.session_id', '$.metadata.conversation_id', '$.user']
            AND time_keys = ['$.created_at'] THEN 'response' END;

-- The fields each line is parsed into (kv_parse: json_transform, text leaves): one structure holding both an API
-- object's and a batch line's. The line-exact reader gives it to kv_shape_lines, the fast one
-- (ingest/openai_object_fast.sql) gives read_json the DuckDB type json_transform makes of it.
CREATE OR REPLACE TEMP MACRO kv_openai_object_record() AS '{"object": "VARCHAR", "status": "VARCHAR", "model": "VARCHAR",
  "created": "VARCHAR", "created_at": "VARCHAR", "user": "VARCHAR", "conversation": {"id": "VARCHAR"},
  "metadata": {"session_id": "VARCHAR", "conversation_id": "VARCHAR"},
  "error": {"code": "VARCHAR", "message": "VARCHAR"},
  "usage": {"prompt_tokens": "VARCHAR", "input_tokens": "VARCHAR", "completion_tokens": "VARCHAR",
            "output_tokens": "VARCHAR", "prompt_tokens_details": {"cached_tokens": "VARCHAR"},
            "input_tokens_details": {"cached_tokens": "VARCHAR"}},
  "custom_id": "VARCHAR",
  "response": {"status_code": "VARCHAR", "body": {"object": "VARCHAR", "status": "VARCHAR", "model": "VARCHAR",
    "error": {"code": "VARCHAR", "message": "VARCHAR"},
    "usage": {"prompt_tokens": "VARCHAR", "input_tokens": "VARCHAR", "completion_tokens": "VARCHAR",
              "output_tokens": "VARCHAR", "prompt_tokens_details": {"cached_tokens": "VARCHAR"},
              "input_tokens_details": {"cached_tokens": "VARCHAR"}}}}}';
