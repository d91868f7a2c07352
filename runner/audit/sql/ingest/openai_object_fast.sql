-- Bare OpenAI API objects read with their shape's default keys, the fast reader (fastread.py uses it on a file
-- its line scan found clean: no blank line, no \r or NUL byte, no line over the reader's default buffer):
-- DuckDB's JSON reader parses each line straight into the type json_transform makes of kv_openai_object_record
-- (ingest/openai_object.sql), and ignore_errors gives a line it cannot use a NULL record in its place, so row k
-- is line k. The rows are the line-exact reader's (the same SQL: ingest/openai_object_rows.sql), except for
-- lines it cannot tell apart without their text (a NULL record, a line that is no object):
-- ingest/shape_fast_need_raw.sql marks those, and fastread.py reads them again line-exactly. _shape is a CTE
-- here: the rows go straight into _staged (ingest/usage_calls.sql, as ingest/calls_from_usage.sql), never held.
{include:ingest/openai_object_record};

INSERT INTO _staged BY NAME
WITH _shape AS (
WITH o AS (
  SELECT CAST(NULL AS BIGINT) AS line, CAST(NULL AS VARCHAR) AS raw, false AS blank, j IS NOT NULL AS ok,
         j IS NOT NULL AS is_object, j AS x, CAST(NULL AS VARCHAR) AS key_session,
         CAST(NULL AS VARCHAR) AS key_time, j AS obj
  FROM read_json($path, format = 'newline_delimited', records = false, ignore_errors = true,
                 compression = $compression, columns = {'j': typeof(json_transform('{}', kv_openai_object_record()))})
),
{include:ingest/openai_object_rows}
),
{include:ingest/usage_calls};
