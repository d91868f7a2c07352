-- The seed's schema: one record per session (or per call), input = system + user, output = assistant,
-- cached_input_tokens part of the input. Optional times: first_seen, last_activity, disconnected_at.
INSERT INTO _staged BY NAME
WITH r AS (
  SELECT *,
    CASE
      WHEN blank THEN NULL
      WHEN note IS NOT NULL THEN note
      WHEN session_id IS NULL THEN 'session_id missing'
      WHEN system_tokens IS NULL THEN 'system_tokens missing'
      WHEN user_tokens IS NULL THEN 'user_tokens missing'
      WHEN assistant_tokens IS NULL THEN 'assistant_tokens missing'
      WHEN cached_input_tokens IS NULL THEN 'cached_input_tokens missing'
      ELSE coalesce(
        kv_int_error(system_tokens, 'system_tokens', false),
        kv_int_error(user_tokens, 'user_tokens', false),
        kv_int_error(assistant_tokens, 'assistant_tokens', false),
        kv_int_error(cached_input_tokens, 'cached_input_tokens', false),
        kv_ts_error(first_seen, 'first_seen'),
        kv_ts_error(last_activity, 'last_activity'),
        kv_ts_error(disconnected_at, 'disconnected_at'),
        CASE WHEN kv_int(cached_input_tokens) > kv_int(system_tokens) + kv_int(user_tokens)
             THEN format('cached_input_tokens ({}) > system_tokens + user_tokens ({})', kv_int(cached_input_tokens),
                         kv_int(system_tokens) + kv_int(user_tokens)) END)
    END AS reason
  FROM (SELECT line, blank, ok, note, kv_nn(session_id) AS session_id, kv_nn(system_tokens) AS system_tokens,
               kv_nn(user_tokens) AS user_tokens, kv_nn(assistant_tokens) AS assistant_tokens,
               kv_nn(cached_input_tokens) AS cached_input_tokens, kv_nn(first_seen) AS first_seen,
               kv_nn(last_activity) AS last_activity, kv_nn(disconnected_at) AS disconnected_at,
               kv_nn(model) AS model FROM _sess_raw) s
)
SELECT $source AS source, line, blank, 'sessions' AS format, reason,
       CASE WHEN reason IS NULL AND NOT blank THEN json_extract_string(session_id, '$') END AS session_id,
       CASE WHEN reason IS NULL AND NOT blank THEN kv_ts(first_seen) END AS start_time,
       CASE WHEN reason IS NULL AND NOT blank THEN kv_ts(last_activity) END AS end_time,
       CASE WHEN reason IS NULL AND NOT blank THEN kv_ts(disconnected_at) END AS disconnected_at,
       NULL AS provider_name,
       json_extract_string(model, '$') AS request_model,
       NULL AS response_model,
       CASE WHEN reason IS NULL AND NOT blank THEN kv_int(system_tokens) + kv_int(user_tokens) END AS input_tokens,
       CASE WHEN reason IS NULL AND NOT blank THEN kv_int(cached_input_tokens) END AS cached_input_tokens,
       CASE WHEN reason IS NULL AND NOT blank THEN 0 END AS cache_creation_input_tokens,
       CASE WHEN reason IS NULL AND NOT blank THEN kv_int(assistant_tokens) END AS output_tokens,
       CASE WHEN reason IS NULL AND NOT blank THEN kv_int(system_tokens) END AS system_tokens,
       CASE WHEN reason IS NULL AND NOT blank THEN 'explicit' END AS system_tokens_source,
       NULL AS content
FROM r;
