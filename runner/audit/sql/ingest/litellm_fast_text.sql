-- LiteLLM lines whose metadata is JSON text (a LiteLLM_SpendLogs row), the fast reader: as ingest/litellm_fast.sql,
-- with the line-exact reader's record (metadata kept as JSON text, its usage object parsed again by
-- ingest/litellm_usage.sql). fastread.py takes it where a file's first line keeps its metadata as a string or
-- without a usage object, which the typed record of ingest/litellm_fast.sql would send line by line to the
-- line-exact reader.
{include:ingest/litellm_record};

INSERT INTO _staged BY NAME
WITH _shape AS (
WITH p AS (
  SELECT CAST(NULL AS BIGINT) AS line, CAST(NULL AS VARCHAR) AS raw, false AS blank, j IS NOT NULL AS ok,
         j IS NOT NULL AS is_object, j AS x, CAST(NULL AS VARCHAR) AS key_session, CAST(NULL AS VARCHAR) AS key_time
  FROM read_json($path, format = 'newline_delimited', records = false, ignore_errors = true,
                 compression = $compression, columns = {'j': typeof(json_transform('{}', kv_litellm_record()))})
),
{include:ingest/litellm_usage}
{include:ingest/litellm_rows}
),
{include:ingest/usage_calls};
