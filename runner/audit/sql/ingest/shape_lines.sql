-- What every ingest_<shape>.sql reader starts from: the file's numbered lines (sql/ingest/read_lines.sql), whether each
-- is blank, valid JSON, a JSON object, the line parsed into the reader's `structure` (x: kv_parse, json_transform
-- with text leaves; NULL unless the line is a JSON object), and its --session-key / --time-key values (the first
-- key with a non-null value wins; the defaults are the shape's own fields, SHAPES in formats.py).
-- At most two parses of a line: kv_parse (which also tells valid JSON apart: only the rare lines it gives NULL for
-- are asked json_valid) and one json_extract_string of every key path at once, which a reader skips
-- (keys_known) where the keys are its shape's defaults and its structure holds them (the same text either way:
-- json_transform's text leaves and json_extract_string both write a value as minified JSON, a string unquoted). A valid line starting with '{' is an
-- object; only other valid lines (a leading space, an array) are asked json_type.
CREATE OR REPLACE TEMP MACRO kv_shape_lines(session_keys, time_keys, structure, keys_known) AS TABLE
WITH p AS (
  SELECT line, raw, blank, CASE WHEN NOT blank THEN kv_parse(raw, structure) END AS parsed
  FROM (SELECT line, raw, kv_blank(raw) AS blank FROM kv_lines())
),
q AS (
  SELECT *, CASE WHEN blank THEN false WHEN parsed IS NOT NULL THEN true ELSE json_valid(raw) END AS ok FROM p
),
o AS (
  SELECT *, CASE WHEN NOT ok THEN false WHEN starts_with(raw, '{') THEN true ELSE json_type(raw) = 'OBJECT' END
              AS is_object,
         CASE WHEN ok AND NOT keys_known AND len(session_keys) + len(time_keys) > 0
              THEN json_extract_string(raw, list_concat(session_keys, time_keys)) END AS keys
  FROM q
)
SELECT line, raw, blank, ok, is_object, CASE WHEN is_object THEN parsed END AS x,
       list_any_value(keys[1:len(session_keys)]) AS key_session,
       list_any_value(keys[len(session_keys) + 1:]) AS key_time
FROM o;
