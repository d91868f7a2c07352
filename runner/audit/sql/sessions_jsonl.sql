-- Sessions as JSON lines: {"session_id", "system_tokens", "user_tokens", "assistant_tokens",
-- "cached_input_tokens", "first_seen"?, "last_activity"?, "disconnected_at"?, "model"?}
INSERT INTO _sess_raw
WITH rec AS (
  SELECT line, raw, json_valid(raw) AS ok FROM kv_lines()
  WHERE raw IS NOT NULL AND trim(raw) <> ''
),
f AS (
  SELECT line, ok, CASE WHEN ok THEN json_extract(raw, [
    '$.session_id', '$.system_tokens', '$.user_tokens', '$.assistant_tokens', '$.cached_input_tokens',
    '$.first_seen', '$.last_activity', '$.disconnected_at', '$.model']) END AS v
  FROM rec
)
SELECT line, ok, CASE WHEN NOT ok THEN 'malformed JSON' END, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]
FROM f;
