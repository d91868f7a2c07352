-- Helpers every ingest query uses. Lambda-free on purpose: DuckDB changed its lambda syntax in 1.3 and
-- 2.0 rejects the old one, and the GPU image may run an older DuckDB than this machine.

-- JSON null counts as absent: {"cached_tokens": null} is "no figure", not "not an integer".
CREATE OR REPLACE TEMP MACRO kv_nn(v) AS CASE WHEN v::VARCHAR = 'null' THEN NULL ELSE v END;

-- Why a JSON token count cannot be used (NULL when it is absent or a non-negative integer).
-- allow_str: OTLP/JSON writes int64 attributes as strings of digits ("intValue": "123").
-- The first test is the fast path: the JSON text of a plain non-negative integer is just digits, so
-- nearly every value is settled by one regular expression, without parsing JSON again.
CREATE OR REPLACE TEMP MACRO kv_int_error(v, name, allow_str) AS
  CASE
    WHEN v IS NULL THEN NULL
    WHEN regexp_full_match(v::VARCHAR, '[0-9]{1,18}') THEN NULL
    WHEN json_type(v) IN ('UBIGINT', 'BIGINT') THEN
      CASE WHEN starts_with(v::VARCHAR, '-') THEN name || ' is negative (' || v::VARCHAR || ')' END
    WHEN json_type(v) = 'DOUBLE' THEN
      CASE WHEN v::DOUBLE < 0 THEN name || ' is negative (' || v::VARCHAR || ')'
           WHEN v::DOUBLE <> floor(v::DOUBLE) THEN name || ' is not an integer (got ' || v::VARCHAR || ')' END
    WHEN allow_str AND json_type(v) = 'VARCHAR' AND regexp_full_match(json_extract_string(v, '$'), '[0-9]+') THEN NULL
    WHEN allow_str AND json_type(v) = 'VARCHAR' AND regexp_full_match(json_extract_string(v, '$'), '-[0-9]+')
      THEN name || ' is negative (' || json_extract_string(v, '$') || ')'
    ELSE name || ' is not an integer (got ' || left(v::VARCHAR, 40) || ')'
  END;

-- A plain non-negative JSON integer: its text is just digits.
CREATE OR REPLACE TEMP MACRO kv_digits(v) AS regexp_full_match(v::VARCHAR, '[0-9]{1,18}');

-- The count itself (only meaningful when kv_int_error is NULL).
CREATE OR REPLACE TEMP MACRO kv_int(v) AS
  CASE WHEN regexp_full_match(v::VARCHAR, '[0-9]{1,18}') THEN CAST(v::VARCHAR AS BIGINT)
       ELSE CAST(TRY_CAST(json_extract_string(v, '$') AS DOUBLE) AS BIGINT) END;

-- A Unix time in seconds, milliseconds, microseconds or nanoseconds (told apart by magnitude).
CREATE OR REPLACE TEMP MACRO kv_ts_number(x) AS
  CASE WHEN x IS NULL OR x < 0 THEN NULL
       WHEN x < 1e11 THEN make_timestamp(CAST(x * 1e6 AS BIGINT))
       WHEN x < 1e14 THEN make_timestamp(CAST(x * 1e3 AS BIGINT))
       WHEN x < 1e17 THEN make_timestamp(CAST(x AS BIGINT))
       ELSE make_timestamp(CAST(x / 1e3 AS BIGINT)) END;

-- A time from JSON: ISO-8601 text (offsets converted to UTC), or a Unix time (number or digit string).
CREATE OR REPLACE TEMP MACRO kv_ts(v) AS
  CASE
    WHEN v IS NULL THEN NULL
    WHEN starts_with(v::VARCHAR, '"') THEN
      coalesce(CAST(TRY_CAST(json_extract_string(v, '$') AS TIMESTAMPTZ) AS TIMESTAMP),
               kv_ts_number(TRY_CAST(json_extract_string(v, '$') AS DOUBLE)))
    ELSE kv_ts_number(TRY_CAST(v::VARCHAR AS DOUBLE))
  END;

CREATE OR REPLACE TEMP MACRO kv_ts_error(v, name) AS
  CASE WHEN v IS NOT NULL AND kv_ts(v) IS NULL THEN name || ' is not a time (got ' || left(v::VARCHAR, 40) || ')' END;

-- The text of a message's content: a string, or the text parts of a list of content blocks.
CREATE OR REPLACE TEMP MACRO kv_text(c) AS
  CASE json_type(c)
    WHEN 'VARCHAR' THEN json_extract_string(c, '$')
    -- OpenAI/Anthropic blocks carry "text"; OpenTelemetry message parts carry "content".
    WHEN 'ARRAY' THEN array_to_string(list_concat(json_extract_string(c, '$[*].text'),
                                                  json_extract_string(c, '$[*].content')), chr(10))
    WHEN 'OBJECT' THEN json_extract_string(c, '$.text')
  END;

-- The lines of the file being read (sql/lines.sql fills _lines), numbered from 1.
CREATE TEMP TABLE IF NOT EXISTS _lines (raw VARCHAR);
CREATE OR REPLACE TEMP MACRO kv_lines() AS TABLE SELECT rowid + 1 AS line, raw FROM _lines;

-- The same checks for values json_transform returned as VARCHAR (the fast path of the OpenAI and
-- Anthropic readers: text leaves cost less than JSON ones). A number's text is its JSON text; a string
-- arrives unquoted, so a count written as "12" is accepted like 12.
CREATE OR REPLACE TEMP MACRO kv_sdigits(s) AS regexp_full_match(s, '[0-9]{1,18}');

CREATE OR REPLACE TEMP MACRO kv_sint_error(s, name) AS
  CASE
    WHEN s IS NULL OR kv_sdigits(s) THEN NULL
    WHEN TRY_CAST(s AS DOUBLE) IS NULL OR s IN ('true', 'false') THEN name || ' is not an integer (got ' || left(s, 40) || ')'
    WHEN TRY_CAST(s AS DOUBLE) < 0 THEN name || ' is negative (' || s || ')'
    WHEN TRY_CAST(s AS DOUBLE) <> floor(TRY_CAST(s AS DOUBLE)) THEN name || ' is not an integer (got ' || s || ')'
  END;

CREATE OR REPLACE TEMP MACRO kv_sint(s) AS
  CASE WHEN kv_sdigits(s) THEN CAST(s AS BIGINT) ELSE CAST(TRY_CAST(s AS DOUBLE) AS BIGINT) END;

CREATE OR REPLACE TEMP MACRO kv_sts(s) AS
  CASE
    WHEN s IS NULL THEN NULL
    WHEN regexp_full_match(s, '[0-9]+(\.[0-9]+)?') THEN kv_ts_number(CAST(s AS DOUBLE))
    ELSE CAST(TRY_CAST(s AS TIMESTAMPTZ) AS TIMESTAMP)
  END;

CREATE OR REPLACE TEMP MACRO kv_sts_error(s, name) AS
  CASE WHEN s IS NOT NULL AND kv_sts(s) IS NULL THEN name || ' is not a time (got ' || left(s, 40) || ')' END;
