-- Bare Anthropic Messages, the fast reader (as ingest/openai_object_fast.sql; fastread.py uses it on a file its
-- line scan found clean, with at most one --session-key and one --time-key, each a plain top-level name): DuckDB's
-- JSON reader parses each line straight into the type json_transform makes of kv_anthropic_message_record with
-- the keys' fields in front ($key_fields, {"<session key>": "VARCHAR", "<time key>": "VARCHAR"}, built by
-- fastread.py as JSON data: the names reach no SQL text), so the session is the record's first field and the
-- time its second. A text leaf holds what json_extract_string gives the line-exact reader for the same key. Row
-- k is line k; the rows are the line-exact reader's (ingest/anthropic_message_rows.sql) except for lines it
-- cannot tell apart without their text, which ingest/shape_fast_need_raw.sql marks.
{include:ingest/anthropic_message_record};

INSERT INTO _staged BY NAME
WITH _shape AS (
WITH o AS (
  SELECT CAST(NULL AS BIGINT) AS line, CAST(NULL AS VARCHAR) AS raw, false AS blank, j IS NOT NULL AS ok,
         j IS NOT NULL AS is_object, j AS x, j AS msg,
         CASE WHEN $has_session THEN struct_extract_at(j, 1) END AS key_session,
         CASE WHEN $has_time THEN struct_extract_at(j, 2) END AS key_time
  FROM read_json($path, format = 'newline_delimited', records = false, ignore_errors = true,
                 compression = $compression,
                 columns = {'j': typeof(json_transform('{}', json_merge_patch($key_fields, kv_anthropic_message_record())))})
),
{include:ingest/anthropic_message_rows}
),
{include:ingest/usage_calls};
