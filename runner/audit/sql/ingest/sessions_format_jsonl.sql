-- Sessions as JSON lines: {"session_id", "system_tokens", "user_tokens", "assistant_tokens",
-- "cached_input_tokens", "first_seen"?, "last_activity"?, "disconnected_at"?, "model"?}
-- Blank lines are kept (blank = true) so they are counted, and never parsed.
INSERT INTO _sess_raw BY NAME
WITH rec AS (
  SELECT line, raw, kv_blank(raw) AS blank FROM kv_lines()
),
f AS (
  SELECT line, raw, blank, NOT blank AND json_valid(raw) AS ok FROM rec
),
g AS (
  SELECT line, blank, ok, CASE WHEN ok THEN json_extract(raw, [
    '$.session_id', '$.system_tokens', '$.user_tokens', '$.assistant_tokens', '$.cached_input_tokens',
    '$.first_seen', '$.last_activity', '$.disconnected_at', '$.model']) END AS v
  FROM f
)
SELECT line, blank, ok, CASE WHEN NOT ok AND NOT blank THEN 'malformed JSON' END AS note,
       v[1] AS session_id, v[2] AS system_tokens, v[3] AS user_tokens, v[4] AS assistant_tokens,
       v[5] AS cached_input_tokens, v[6] AS first_seen, v[7] AS last_activity, v[8] AS disconnected_at, v[9] AS model
FROM g;
