-- --session-key / --time-key over a file its own reader has ingested (the OpenAI and Anthropic envelopes,
-- whose readers parse each line once for speed): the user's keys replace the reader's session and time for
-- every call of the file. It runs only when a key was given, on the lines sql/ingest/read_lines.sql read, and finds
-- each call's line by number. A call none of the session keys names is its own session, as by default.
CREATE OR REPLACE TEMP TABLE _keys AS
SELECT line, list_any_value(json_extract_string(raw, $session_keys)) AS s_session,
       list_any_value(json_extract_string(raw, $time_keys)) AS s_time
FROM kv_lines() WHERE NOT kv_blank(raw) AND json_valid(raw);

UPDATE _staged SET
  session_id = CASE WHEN $has_session
                    THEN coalesce(k.s_session, kv_no_session($source_name, _staged.line))
                    ELSE _staged.session_id END,
  start_time = CASE WHEN $has_time THEN kv_sts(k.s_time) ELSE _staged.start_time END,
  reason = CASE WHEN $has_time THEN kv_sts_error(k.s_time, $time_label) END
FROM _keys k
WHERE _staged.source = $source AND _staged.line = k.line AND _staged.reason IS NULL AND NOT _staged.blank;

DROP TABLE _keys;
