-- Sessions as Parquet. "line" is the 1-based row number. Each row goes through to_json, so typed
-- columns keep their JSON type (a DOUBLE 12.5 is "not an integer") and absent optional columns are NULL.
INSERT INTO _sess_raw
WITH v AS (
  SELECT file_row_number + 1 AS line,
         json_extract(to_json(p), ['$.session_id', '$.system_tokens', '$.user_tokens', '$.assistant_tokens',
                      '$.cached_input_tokens', '$.first_seen', '$.last_activity', '$.disconnected_at',
                      '$.model']) AS v
  FROM read_parquet($path, file_row_number = true) p
)
SELECT line, true, NULL,
       CASE WHEN json_type(v[1]) IN ('VARCHAR', 'BIGINT', 'UBIGINT') THEN to_json(json_extract_string(v[1], '$')) END,
       v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]
FROM v;
