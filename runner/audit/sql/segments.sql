-- How long each call's KV stays resident, and from when it counts as idle. Times in epoch seconds.
-- A session's cache after call i holds that call's whole context (input + output tokens) and, with no
-- eviction, stays until the session's next call replaces it, or until the end of the log for its last
-- call. It is idle from `idle_timeout` seconds after the call's activity, or from an explicit disconnect
-- (last call only). Calls without any time cannot be placed and are left out (the audit says so).
CREATE OR REPLACE TEMP TABLE _seg AS
WITH c AS (
  SELECT session_id, source, line,
         epoch_us(coalesce(start_time, end_time)) / 1e6 AS t_start,
         epoch_us(coalesce(end_time, start_time)) / 1e6 AS t_act,
         input_tokens + output_tokens AS ctx_tokens,
         epoch_us(disconnected_at) / 1e6 AS disc
  FROM token_calls  -- this audit's calls only (a temporary view)
  WHERE coalesce(start_time, end_time) IS NOT NULL
),
o AS (  -- one window (one sort by session and time) gives both the next call and the session's disconnect
  SELECT *, lead(t_start) OVER w AS t_next,
         max(disc) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS t_disc
  FROM c
  WINDOW w AS (PARTITION BY session_id ORDER BY t_start, source, line)
),
win AS (
  SELECT max(greatest(t_act, coalesce(t_disc, t_act))) AS t_log_end FROM o
)
SELECT session_id, t_start, coalesce(t_next, win.t_log_end) AS t_end, t_act, ctx_tokens,
       ctx_tokens * $bytes_per_token AS kv_bytes, t_next IS NULL AS is_last,
       CASE WHEN t_next IS NULL THEN t_disc END AS t_disc,
       CASE WHEN t_next IS NULL AND t_disc IS NOT NULL THEN least(t_disc, t_act + $idle_timeout)
            ELSE t_act + $idle_timeout END AS t_idle
FROM o, win;
