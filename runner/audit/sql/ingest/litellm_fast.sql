-- LiteLLM lines read with the shape's default keys, the fast reader (as ingest/openai_object_fast.sql): DuckDB's
-- JSON reader parses each line straight into the type json_transform makes of kv_litellm_fast_record (the usage
-- object's figures typed, so nothing is parsed twice), row k is line k, and the rows are the line-exact
-- reader's (ingest/litellm_rows.sql) except for lines it cannot tell apart without their text (a NULL record, a
-- line that is no object, a metadata without a usage object it reads): ingest/shape_fast_need_raw.sql marks those.
{include:ingest/litellm_record};

INSERT INTO _staged BY NAME
WITH _shape AS (
WITH p AS (  -- ok: a row this reader can judge; a metadata without a usage_object it reads (a string, an object
            -- without one) is 'malformed JSON' here, so the line is read again line-exactly
  SELECT CAST(NULL AS BIGINT) AS line, CAST(NULL AS VARCHAR) AS raw, false AS blank,
         j IS NOT NULL AND (j.metadata IS NULL OR j.metadata.usage_object IS NOT NULL) AS ok,
         j IS NOT NULL AS is_object, j AS x, CAST(NULL AS VARCHAR) AS key_session, CAST(NULL AS VARCHAR) AS key_time
  FROM read_json($path, format = 'newline_delimited', records = false, ignore_errors = true,
                 compression = $compression, columns = {'j': typeof(json_transform('{}', kv_litellm_fast_record()))})
),
u AS (  -- the usage object's figures: metadata's, as the record typed them, else hidden_params'
  SELECT *, CASE WHEN x.metadata IS NOT NULL
                 THEN [x.metadata.usage_object.prompt_tokens_details.cached_tokens,
                       x.metadata.usage_object.cache_read_input_tokens,
                       x.metadata.usage_object.cache_creation_input_tokens]
                 ELSE kv_litellm_hidden_usage(x.hidden_params.usage_object) END AS usage
  FROM p
)
{include:ingest/litellm_rows}
),
{include:ingest/usage_calls};
