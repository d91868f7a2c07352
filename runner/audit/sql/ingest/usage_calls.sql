-- The calls and rejects of _shape's rows (its readers' texts): not run alone, ingest/calls_from_usage.sql and
-- the fast readers (ingest/openai_object_fast.sql, where _shape is a CTE) include it after their WITH.
c AS (  -- every value converted once: the checks below and the output share them
  SELECT *, kv_sint(s_input) AS n_input, kv_sint(s_cached) AS c_cached, kv_sint(s_write) AS c_write,
         kv_sint(s_output) AS n_output, kv_sts(s_start) AS t_start, kv_sts(s_end) AS t_end
  FROM _shape
),
v AS (  -- a value's reject reason only where it did not convert: kv_sint and kv_sint_error never both give
        -- NULL for a value (setup/macros.sql), so a converted one has none, and its text is not tested again
  SELECT * EXCLUDE (c_cached, c_write),
         CASE WHEN n_input IS NULL THEN kv_sint_error(s_input, f_input) END AS e_input,
         CASE WHEN c_cached IS NULL THEN kv_sint_error(s_cached, f_cached) END AS e_cached,
         CASE WHEN c_write IS NULL THEN kv_sint_error(s_write, f_write) END AS e_write,
         CASE WHEN n_output IS NULL THEN kv_sint_error(s_output, f_output) END AS e_output,
         coalesce(c_cached, 0) AS n_cached, coalesce(c_write, 0) AS n_write
  FROM c
),
r AS (
  SELECT *,
    CASE
      WHEN blank OR skip THEN NULL
      WHEN NOT ok THEN 'malformed JSON'
      WHEN shape_reason IS NOT NULL THEN shape_reason
      WHEN s_input IS NULL THEN f_input || ' missing'
      WHEN s_output IS NULL THEN f_output || ' missing'
      ELSE coalesce(e_input, e_cached, e_write, e_output,
        CASE WHEN s_start IS NOT NULL AND t_start IS NULL THEN kv_sts_error(s_start, $time_label) END,
        CASE WHEN s_end IS NOT NULL AND t_end IS NULL THEN kv_sts_error(s_end, 'end time') END,
        CASE WHEN includes_cache AND n_cached + n_write > n_input
             THEN format('{} ({}){} > {} ({})', f_cached, n_cached,
                         CASE WHEN n_write > 0 THEN format(' + {} ({})', f_write, n_write) ELSE '' END,
                         f_input, n_input) END)
    END AS reason
  FROM v
)
SELECT $source AS source, line, blank OR skip AS blank, $format AS format, reason,
       CASE WHEN reason IS NULL THEN s_session END AS session_id,  -- none: named after the line later
       CASE WHEN reason IS NULL THEN t_start END AS start_time,
       CASE WHEN reason IS NULL THEN t_end END AS end_time,
       NULL AS disconnected_at, provider_name, request_model, response_model,
       CASE WHEN reason IS NULL THEN
         CASE WHEN includes_cache THEN n_input ELSE n_input + n_cached + n_write END
       END AS input_tokens,
       CASE WHEN reason IS NULL THEN n_cached END AS cached_input_tokens,
       CASE WHEN reason IS NULL THEN n_write END AS cache_creation_input_tokens,
       CASE WHEN reason IS NULL THEN n_output END AS output_tokens,
       NULL AS system_tokens, NULL AS system_tokens_source,
       CASE WHEN reason IS NULL THEN content END AS content
FROM r
