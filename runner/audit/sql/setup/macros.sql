-- Helpers every ingest query uses. Lambda-free on purpose: DuckDB changed its lambda syntax in 1.3 and
-- 2.0 rejects the old one, and the GPU image may run an older DuckDB than this machine.

-- A call that names no session is its own session, named after its file and line: the one definition of
-- that name (ingest/number_lines.sql, ingest/rekey.sql, ingest/otel.sql), and of telling such calls apart.
CREATE OR REPLACE TEMP MACRO kv_no_session_prefix() AS '(no session) ';
CREATE OR REPLACE TEMP MACRO kv_no_session(file_name, place) AS kv_no_session_prefix() || file_name || ':' || place;
CREATE OR REPLACE TEMP MACRO kv_unnamed(session_id) AS starts_with(session_id, kv_no_session_prefix());

-- JSON null counts as absent: {"cached_tokens": null} is "no figure", not "not an integer".
CREATE OR REPLACE TEMP MACRO kv_nn(v) AS CASE WHEN v::VARCHAR = 'null' THEN NULL ELSE v END;

-- A blank line: empty, or only whitespace (a BOM included). Skipped and counted, never parsed. The first
-- test settles nearly every line. BLANK_CHARS in ingest.py is the same set.
CREATE OR REPLACE TEMP MACRO kv_blank(raw) AS
  CASE WHEN starts_with(raw, '{') THEN false WHEN raw IS NULL THEN true
       ELSE trim(raw, ' ' || chr(9) || chr(13) || chr(12) || chr(11) || chr(65279)) = '' END;

-- VALUE CONVERSIONS. Every ingest (sql/ingest/*.sql) converts log values ONLY through
-- these macros, because they are total: no input makes them raise inside a query (a raise would cost
-- the whole file, not one line). Each value has a pair:
--   kv_sint(s)                 the count, a BIGINT in [0, kv_max_count()], or NULL when s is not one;
--   kv_sint_error(s, 'field')  NULL when s is absent or a usable count, else the reject reason, naming
--                              the field ("usage.prompt_tokens is out of range (got 1e+300; ...)").
-- For every non-NULL s exactly one of the two is NULL, so a query that rejects on the error and uses the
-- value only when there is no error never meets a half-converted record.
--   s  = text: what json_transform returns for a "VARCHAR" leaf (a number's JSON text, a string unquoted,
--        so "12" counts like 12), or a CSV cell;
--   kv_int / kv_int_error(v, 'field', allow_str) take a JSON value instead (json_extract); allow_str
--        accepts counts written as JSON strings (OTLP/JSON writes int64 attributes as "123").
--   kv_sts / kv_sts_error (text) and kv_ts / kv_ts_error (JSON): the same for times (ISO-8601 with or
--        without an offset, or Unix s/ms/us/ns); infinite and out-of-range times are rejects too.
-- A count outside [0, kv_max_count()] is out of range: no real call or session holds ten billion tokens
-- (a thousand times the largest context windows), and the bound keeps every sum of counts (per call,
-- per session, per audit) far inside BIGINT, so nothing downstream can overflow either.
CREATE OR REPLACE TEMP MACRO kv_max_count() AS CAST(10000000000 AS BIGINT);

-- A JSON number's text (also what DuckDB prints for a DOUBLE: '1e+300', '100000.0').
CREATE OR REPLACE TEMP MACRO kv_is_number(s) AS regexp_full_match(s, '-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?');

-- The fast path: the text of a plain count up to 9,999,999,999 is at most ten digits (nearly every value).
CREATE OR REPLACE TEMP MACRO kv_sdigits(s) AS regexp_full_match(s, '[0-9]{1,10}');

CREATE OR REPLACE TEMP MACRO kv_sint(s) AS
  CASE WHEN kv_sdigits(s) THEN CAST(s AS BIGINT)
       WHEN kv_is_number(s) AND TRY_CAST(s AS DOUBLE) BETWEEN 0 AND kv_max_count()
            AND TRY_CAST(s AS DOUBLE) = floor(TRY_CAST(s AS DOUBLE))
         THEN CAST(TRY_CAST(s AS DOUBLE) AS BIGINT) END;

CREATE OR REPLACE TEMP MACRO kv_sint_error(s, name) AS
  CASE
    WHEN s IS NULL OR kv_sdigits(s) THEN NULL
    WHEN lower(trim(s)) IN ('nan', '-nan', 'inf', '-inf', '+inf', 'infinity', '-infinity', '+infinity')
      THEN name || ' is not a finite number (got ' || s || ')'
    WHEN NOT kv_is_number(s) THEN name || ' is not an integer (got ' || left(s, 40) || ')'
    WHEN NOT isfinite(TRY_CAST(s AS DOUBLE)) THEN name || ' is out of range (got ' || left(s, 40) || ')'
    WHEN TRY_CAST(s AS DOUBLE) < 0 THEN name || ' is negative (' || left(s, 40) || ')'
    WHEN TRY_CAST(s AS DOUBLE) <> floor(TRY_CAST(s AS DOUBLE)) THEN name || ' is not an integer (got ' || left(s, 40) || ')'
    WHEN TRY_CAST(s AS DOUBLE) > kv_max_count()
      THEN name || ' is out of range (got ' || left(s, 40) || '; a token count is at most 10,000,000,000)'
  END;

-- JSON values: numbers by their text, strings (with allow_str) by their content, anything else rejected.
CREATE OR REPLACE TEMP MACRO kv_int_error(v, name, allow_str) AS
  CASE
    WHEN v IS NULL OR kv_sdigits(v::VARCHAR) THEN NULL
    WHEN json_type(v) IN ('UBIGINT', 'BIGINT', 'DOUBLE') THEN kv_sint_error(v::VARCHAR, name)
    WHEN allow_str AND json_type(v) = 'VARCHAR' THEN kv_sint_error(json_extract_string(v, '$'), name)
    ELSE name || ' is not an integer (got ' || left(v::VARCHAR, 40) || ')'
  END;

CREATE OR REPLACE TEMP MACRO kv_int(v) AS
  CASE WHEN kv_sdigits(v::VARCHAR) THEN CAST(v::VARCHAR AS BIGINT)
       WHEN json_type(v) IN ('UBIGINT', 'BIGINT', 'DOUBLE', 'VARCHAR') THEN kv_sint(json_extract_string(v, '$')) END;

-- Times an LLM log can hold: 2000 up to (not including) 2100. Anything else (year 0, year 99999, an epoch
-- in the wrong unit read as year 5138) is a reject naming its field, never a billion-dollar idle cost.
CREATE OR REPLACE TEMP MACRO kv_in_window(t) AS
  CASE WHEN t >= TIMESTAMP '2000-01-01' AND t < TIMESTAMP '2100-01-01' THEN t END;

-- A Unix time in seconds, milliseconds, microseconds or nanoseconds (told apart by magnitude); NULL for
-- NaN, infinities, negatives and anything outside kv_in_window.
CREATE OR REPLACE TEMP MACRO kv_ts_number(x) AS
  kv_in_window(CASE WHEN x IS NULL OR NOT isfinite(x) OR x < 0 OR x >= 1e20 THEN NULL
       WHEN x < 1e11 THEN make_timestamp(CAST(x * 1e6 AS BIGINT))
       WHEN x < 1e14 THEN make_timestamp(CAST(x * 1e3 AS BIGINT))
       WHEN x < 1e17 THEN make_timestamp(CAST(x AS BIGINT))
       ELSE make_timestamp(CAST(x / 1e3 AS BIGINT)) END);

-- A UTC offset beyond ±14:00 (the widest in use): +99:00 is damage, not a time zone.
-- A CASE, not one AND: DuckDB evaluates every operand of an AND for every row, and the regular expressions
-- below cost more than the rest of a time's conversion; the first test (an offset's sign where one would
-- be: 6 or 5 characters from the end) is cheap and settles nearly every time ('...Z', '...:00').
CREATE OR REPLACE TEMP MACRO kv_bad_offset(s) AS
  CASE WHEN s IS NULL THEN NULL
       WHEN contains(s, ':') AND (substr(s, -6, 1) IN ('+', '-') OR substr(s, -5, 1) IN ('+', '-'))
       THEN regexp_matches(s, '[T ][0-9:.,]+ *[+-]([0-9]{2}):?([0-9]{2})$')
            AND (TRY_CAST(regexp_extract(s, '[+-]([0-9]{2}):?([0-9]{2})$', 1) AS INTEGER) * 60
                 + TRY_CAST(regexp_extract(s, '[+-]([0-9]{2}):?([0-9]{2})$', 2) AS INTEGER)) > 14 * 60
       ELSE false END;

-- ISO-8601 text (offsets converted to UTC); NULL for text that is not a finite time ('infinity').
-- The UTC time is rebuilt from the epoch microseconds: what a cast to TIMESTAMP gives under TimeZone UTC,
-- without the cast's per-value time-zone lookup (a third of the time of the ingest's value conversions).
CREATE OR REPLACE TEMP MACRO kv_ts_text(s) AS
  CASE WHEN isfinite(TRY_CAST(s AS TIMESTAMPTZ)) AND NOT kv_bad_offset(s)
       THEN kv_in_window(make_timestamp(epoch_us(TRY_CAST(s AS TIMESTAMPTZ)))) END;

-- A time from JSON: ISO-8601 text, or a Unix time (number or digit string).
CREATE OR REPLACE TEMP MACRO kv_ts(v) AS
  CASE
    WHEN v IS NULL THEN NULL
    WHEN starts_with(v::VARCHAR, '"') THEN
      coalesce(kv_ts_text(json_extract_string(v, '$')),
               kv_ts_number(TRY_CAST(json_extract_string(v, '$') AS DOUBLE)))
    WHEN kv_is_number(v::VARCHAR) THEN kv_ts_number(TRY_CAST(v::VARCHAR AS DOUBLE))
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

-- The lines of the file being read (sql/ingest/read_lines.sql fills _lines), numbered from 1.
CREATE TEMP TABLE IF NOT EXISTS _lines (raw VARCHAR);
CREATE OR REPLACE TEMP MACRO kv_lines() AS TABLE SELECT rowid + 1 AS line, raw FROM _lines;

-- Times as text (json_transform "VARCHAR" leaves): digits are a Unix time, anything else ISO-8601.
-- (A '-', in every ISO date, settles most texts without the regular expression.)
-- A plain UTC time ('2025-06-02T10:00:00Z', '...:00.123Z': nearly every logged time) is cast straight to
-- TIMESTAMP: the instant the TIMESTAMPTZ cast in UTC gives it, without that cast's time-zone work (done twice)
-- and the offset test, most of the time conversions' cost. Only that exact shape: the TIMESTAMP cast ignores
-- what follows a space ('... Europe/BerlinZ'), which kv_ts_text rejects. A plain time that cast does not
-- read, or reads outside kv_in_window, takes kv_ts_text as before (tests/test_audit_fast_path.py).
CREATE OR REPLACE TEMP MACRO kv_plain_utc(s) AS
  regexp_full_match(s, '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z');

CREATE OR REPLACE TEMP MACRO kv_sts_any(s) AS
  CASE
    WHEN s IS NULL THEN NULL
    WHEN kv_plain_utc(s) THEN coalesce(kv_in_window(TRY_CAST(s AS TIMESTAMP)), kv_ts_text(s))
    WHEN contains(s, '-') THEN kv_ts_text(s)
    WHEN regexp_full_match(s, '[0-9]+(\.[0-9]+)?') THEN kv_ts_number(TRY_CAST(s AS DOUBLE))
    ELSE kv_ts_text(s)
  END;

-- kv_sts_general: the value kv_sts_any gives, for every text, by one cheap test of its form and one conversion.
-- A macro's argument is expanded wherever it is named, so kv_in_window(kv_ts_number(TRY_CAST(s AS DOUBLE))) converts a
-- time a dozen times (three copies of a CASE that casts in each test): most of an audit's value conversions.
-- Here each form converts once, where the window cannot matter, and only times near its edges take the exact
-- general path:
--   ISO-8601 in the strict form 'YYYY-MM-DD[T ]HH:MM:SS[.f{1,6}][Z|+HH:MM|-HH:MM]' (kv_iso_strict; for such
--     texts kv_sts_any's branches all give what kv_ts_text gives): an offset beyond 14:00 is NULL; a year from
--     2001 to 2098 stays in the window whatever the offset, so it is the one TIMESTAMPTZ cast (NULL where the
--     cast reads no time, as in kv_ts_text); years 2000 and 2099 and the rest take kv_ts_text's window check;
--   digits with an optional fraction (a Unix time in s/ms/us/ns): a value more than a second inside the window
--     in its unit (kv_ts_number's bands: s < 1e11 <= ms < 1e14 <= us < 1e17 <= ns) is that unit's one
--     conversion, which cannot round out of the window; the rest takes kv_ts_number.
-- Everything else takes kv_sts_any. tests/test_audit_rejects.py compares kv_sts with kv_sts_any on some 80,000
-- damaged times of every form; tests/test_audit_times.py pins each edge (units, window, offsets, fractions).
CREATE OR REPLACE TEMP MACRO kv_iso_strict(s) AS
  regexp_full_match(s, '[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})?');

CREATE OR REPLACE TEMP MACRO kv_unix_inside(x) AS
  CASE WHEN x > 946684801 AND x < 4102444799 THEN make_timestamp(CAST(x * 1e6 AS BIGINT))
       WHEN x > 946684801e3 AND x < 4102444799e3 THEN make_timestamp(CAST(x * 1e3 AS BIGINT))
       WHEN x > 946684801e6 AND x < 4102444799e6 THEN make_timestamp(CAST(x AS BIGINT))
       WHEN x > 946684801e9 AND x < 4102444799e9 THEN make_timestamp(CAST(x / 1e3 AS BIGINT)) END;

CREATE OR REPLACE TEMP MACRO kv_sts_general(s) AS
  CASE
    WHEN s IS NULL THEN NULL
    WHEN contains(s, '-') THEN
      CASE WHEN NOT kv_iso_strict(s) THEN kv_sts_any(s)
           WHEN substr(s, -6, 1) IN ('+', '-')
                AND TRY_CAST(substr(s, -5, 2) AS INTEGER) * 60 + TRY_CAST(substr(s, -2, 2) AS INTEGER) > 14 * 60
             THEN NULL
           WHEN starts_with(s, '20') AND substr(s, 3, 2) NOT IN ('00', '99')
             THEN make_timestamp(epoch_us(TRY_CAST(s AS TIMESTAMPTZ)))
           ELSE kv_in_window(make_timestamp(epoch_us(TRY_CAST(s AS TIMESTAMPTZ)))) END
    WHEN regexp_full_match(s, '[0-9]+(\.[0-9]+)?') THEN
      coalesce(kv_unix_inside(TRY_CAST(s AS DOUBLE)), kv_ts_number(TRY_CAST(s AS DOUBLE)))
    ELSE kv_sts_any(s)
  END;

-- kv_sts itself: kv_sts_general's value, with the common texts read outside any CASE, where DuckDB computes
-- each cast once per row (inside a CASE's branch it is computed again at each mention):
--   kv_iso_ok: a text that is one TIMESTAMPTZ cast (kv_ts_cast). Any text ending in 'Z' (kv_bad_offset reads no
--     offset in it: the offsets it reads end in digits; and kv_sts_any reads it as kv_ts_text does, its
--     plain-UTC cast giving the same instant), and a text with a '-' (kv_sts_any reads it with kv_ts_text) where
--     kv_bad_offset is false without its regular expressions: no '+' or '-' where an offset's sign would be,
--     or an offset 'HH:MM' whose hour is at most 12 (under 14:00 whatever its minutes). No regular expression
--     on these paths.
--   kv_unix_ok: digits with an optional fraction, whose value kv_unix_inside reads when it is more than a
--     second inside the window (kv_sts_general's own first step for them).
-- Wherever one of these gives a time it is kv_sts_general's; where it gives none, kv_sts_general decides.
-- Nested CASEs, not ANDs, where an operand costs (DuckDB evaluates every operand of an AND for every row).
CREATE OR REPLACE TEMP MACRO kv_iso_ok(s) AS
  CASE WHEN ends_with(s, 'Z') THEN s
       WHEN NOT contains(s, '-') THEN NULL
       WHEN substr(s, -6, 1) IN ('+', '-') THEN
         CASE WHEN substr(s, -3, 1) = ':' AND substr(s, -5) <= '12:99' THEN s END
       WHEN substr(s, -5, 1) NOT IN ('+', '-') THEN s
  END;

CREATE OR REPLACE TEMP MACRO kv_ts_cast(s) AS
  CASE WHEN isfinite(TRY_CAST(s AS TIMESTAMPTZ)) THEN kv_in_window(make_timestamp(epoch_us(TRY_CAST(s AS TIMESTAMPTZ)))) END;

-- (The '-' test first: DuckDB computes this once per row for every row, ISO texts too, and settles those cheaply.)
CREATE OR REPLACE TEMP MACRO kv_unix_ok(s) AS
  CASE WHEN contains(s, '-') THEN NULL WHEN regexp_full_match(s, '[0-9]+(\.[0-9]+)?') THEN s END;

CREATE OR REPLACE TEMP MACRO kv_sts(s) AS
  coalesce(kv_ts_cast(kv_iso_ok(s)), kv_unix_inside(TRY_CAST(kv_unix_ok(s) AS DOUBLE)), kv_sts_general(s));

CREATE OR REPLACE TEMP MACRO kv_sts_error(s, name) AS
  CASE WHEN s IS NOT NULL AND kv_sts(s) IS NULL THEN name || ' is not a time (got ' || left(s, 40) || ')' END;

-- kv_read_lines(file, sep, line_bytes, codec): the lines of one text file, in file order, blank ones too
-- (NULL). One VARCHAR column: NUL as the delimiter and no quoting make DuckDB's CSV reader hand back each
-- line untouched, in parallel. The one definition every line-reading query uses (ingest/read_lines.sql, ingest/*.sql).
CREATE OR REPLACE TEMP MACRO kv_read_lines(file, sep, line_bytes, codec) AS TABLE
  SELECT raw FROM read_csv(file, columns = {'raw': 'VARCHAR'}, header = false, delim = sep, quote = '',
                           escape = '', auto_detect = false, max_line_size = line_bytes, compression = codec);

-- The same lines as records of a streaming reader (ingest/openai.sql, ingest/anthropic.sql): every line, blank
-- ones too, unnumbered: rows keep file order, and ingest/number_lines.sql numbers them afterwards.
CREATE OR REPLACE TEMP MACRO kv_line_records(file, sep, line_bytes, codec) AS TABLE
  SELECT CAST(NULL AS BIGINT) AS line, raw, kv_blank(raw) AS blank FROM kv_read_lines(file, sep, line_bytes, codec);

-- KV bytes a session holds at t tokens of context (runner/audit/kv_pricing.py, Pricing.curve): every layer adds its
-- bytes per token until its cap; the layers capped at c_i (a sliding window - 1, a chunk - 1) stop growing there
-- (b_i of the per-token bytes); Mamba and linear-attention layers hold `constant` bytes whatever t. Three cap
-- slots (unused ones have b = 0), lambda-free like every macro here. Monotonic in t, so the bytes of a session's
-- longest context are its largest.
CREATE OR REPLACE TEMP MACRO kv_bytes_at(t, per_token, constant, b1, c1, b2, c2, b3, c3) AS
  t * per_token + constant - b1 * greatest(0, t - c1) - b2 * greatest(0, t - c2) - b3 * greatest(0, t - c3);
