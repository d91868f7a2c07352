-- LiteLLM lines read with the shape's default keys, the fast reader (as ingest/openai_object_fast.sql): DuckDB's
-- JSON reader parses each line straight into the type json_transform makes of kv_litellm_record, row k is line k,
-- and the rows are the line-exact reader's (ingest/litellm_rows.sql) except for lines it cannot tell apart
-- without their text (a NULL record, a line that is no object): ingest/shape_fast_need_raw.sql marks those.
{include:ingest/litellm_record};

INSERT INTO _staged BY NAME
WITH _shape AS (
WITH p AS (
  SELECT CAST(NULL AS BIGINT) AS line, CAST(NULL AS VARCHAR) AS raw, false AS blank, j IS NOT NULL AS ok,
         j IS NOT NULL AS is_object, j AS x, CAST(NULL AS VARCHAR) AS key_session, CAST(NULL AS VARCHAR) AS key_time
  FROM read_json($path, format = 'newline_delimited', records = false, ignore_errors = true,
                 compression = $compression, columns = {'j': typeof(json_transform('{}', kv_litellm_record()))})
),
{include:ingest/litellm_rows}
),
{include:ingest/usage_calls};
