-- OpenAI envelopes, the fast reader (ingest.py uses it on a file it has checked: no blank lines, no \r or NUL
-- byte, no line over the reader's default buffer): DuckDB's JSON reader parses each line straight into the
-- record type of kv_openai_record (ingest/openai_record.sql), the type json_transform makes of it, and
-- ignore_errors gives a line it cannot use a NULL record in its place, so row k is line k. That is the p the
-- line-exact reader (ingest/openai.sql) makes with raw text and json_transform; the checks and the output are
-- the same SQL (ingest/openai_calls.sql). Rows whose result needs the raw line (need_raw) are read again
-- line-exactly; ingest.py checks that there is one row per line.
INSERT INTO _staged BY NAME
WITH p AS (
  SELECT CAST(NULL AS BIGINT) AS line, CAST(NULL AS VARCHAR) AS raw, false AS blank, j
  FROM read_json($path, format = 'newline_delimited', records = false, ignore_errors = true,
                 compression = $compression, columns = {'j': typeof(json_transform('{}', kv_openai_record()))})
),
{include:ingest/openai_calls};
