-- How long each call's KV stays resident, and from when it counts as idle. Times in epoch seconds.
-- A session's cache after call i holds that call's whole context (input + output tokens) and, with no
-- eviction, stays until the session's next call replaces it, or until the end of the log for its last
-- call. It is idle from `idle_timeout` seconds after the call's activity, or from an explicit disconnect
-- (last call only). Calls without any time cannot be placed and are left out (the audit says so).
CREATE OR REPLACE TEMP TABLE _seg AS
WITH c AS NOT MATERIALIZED (SELECT * FROM _timed_calls),  -- re-read per use (a scan of the calls) rather than held
src AS (  -- each file's rank in name order: the window sorts on this small integer, not on the path string
  SELECT source, row_number() OVER (ORDER BY source) AS src FROM (SELECT DISTINCT source FROM c)
),
o AS (  -- one window (one sort by session and time): the next call; ties in time go in file, then line order
  SELECT c.session_id, c.t_start, c.t_act, c.ctx_tokens,
         lead(c.t_start) OVER (PARTITION BY c.session_id ORDER BY c.t_start, src.src, c.line) AS t_next
  FROM c JOIN src ON src.source IS NOT DISTINCT FROM c.source
),
dsc AS (  -- the session's disconnect (its latest): a grouped scan of the few calls that log one, not a second window
  SELECT session_id, max(disc) AS t_disc FROM c WHERE disc IS NOT NULL GROUP BY session_id
),
win AS (  -- the log's end (metrics/timed_calls.sql): these calls' own, or $t_log_end, the whole audit's, where they are one
          -- share of it (runner/audit/distributed.py)
  SELECT coalesce(CAST($t_log_end AS DOUBLE), (SELECT t_log_end FROM kv_log_end())) AS t_log_end
)
SELECT o.session_id, t_start, coalesce(t_next, win.t_log_end) AS t_end, t_act, ctx_tokens,
       kv_bytes_at(ctx_tokens, $bytes_per_token, $kv_constant_bytes,
                   $kv_cap_bytes_1, $kv_cap_1, $kv_cap_bytes_2, $kv_cap_2, $kv_cap_bytes_3, $kv_cap_3) AS kv_bytes,
       t_next IS NULL AS is_last,
       dsc.t_disc,  -- last calls only (the join below matches no other)
       CASE WHEN t_next IS NULL AND dsc.t_disc IS NOT NULL THEN least(dsc.t_disc, t_act + $idle_timeout)
            ELSE t_act + $idle_timeout END AS t_idle
FROM o LEFT JOIN dsc ON o.t_next IS NULL AND dsc.session_id IS NOT DISTINCT FROM o.session_id, win;
