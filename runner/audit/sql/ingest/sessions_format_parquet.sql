-- Sessions as Parquet. "line" is the 1-based row number. Each row goes through to_json, so typed
-- columns keep their JSON type (a DOUBLE 12.5 is "not an integer") and absent optional columns are NULL.
INSERT INTO _sess_raw BY NAME
WITH v AS (
  SELECT file_row_number + 1 AS line,
         json_extract(to_json(p), ['$.session_id', '$.system_tokens', '$.user_tokens', '$.assistant_tokens',
                      '$.cached_input_tokens', '$.first_seen', '$.last_activity', '$.disconnected_at',
                      '$.model']) AS v
  FROM read_parquet($path, file_row_number = true) p
)
SELECT line, true AS ok,
       CASE WHEN json_type(v[1]) IN ('VARCHAR', 'BIGINT', 'UBIGINT') THEN to_json(json_extract_string(v[1], '$')) END
         AS session_id,
       v[2] AS system_tokens, v[3] AS user_tokens, v[4] AS assistant_tokens, v[5] AS cached_input_tokens,
       v[6] AS first_seen, v[7] AS last_activity, v[8] AS disconnected_at, v[9] AS model
FROM v;
