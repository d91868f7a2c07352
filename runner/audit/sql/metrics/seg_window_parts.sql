-- The time span the segments (_seg, metrics/segments.sql) cover, and their active session-seconds (resident and not
-- yet idle). One row per share of the audit's calls (all of them in one process; one partition of sessions
-- in runner/audit/distributed.py): extremes and sums only, so metrics/seg_window.sql makes the whole audit's row of
-- any number of them.
CREATE OR REPLACE TEMP TABLE _seg_window_parts AS
SELECT min(t_start) AS t0, max(t_end) AS t1, count(*) AS n,
       sum(greatest(0, least(t_end, greatest(t_idle, t_start)) - t_start)) AS active_session_s
FROM _seg;
