-- What every ingest_<shape>.sql reader starts from: the file's numbered lines (sql/ingest/read_lines.sql), whether each
-- is blank, valid JSON, a JSON object, and its --session-key / --time-key values (the first key with a
-- non-null value wins; the defaults are the shape's own fields, SHAPES in ingest.py).
CREATE OR REPLACE TEMP MACRO kv_shape_lines(session_keys, time_keys) AS TABLE
SELECT line, raw, blank, ok, CASE WHEN ok THEN json_type(raw) = 'OBJECT' ELSE false END AS is_object,
       CASE WHEN ok THEN list_any_value(json_extract_string(raw, session_keys)) END AS key_session,
       CASE WHEN ok THEN list_any_value(json_extract_string(raw, time_keys)) END AS key_time
FROM (SELECT line, raw, kv_blank(raw) AS blank, NOT kv_blank(raw) AND json_valid(raw) AS ok FROM kv_lines());
