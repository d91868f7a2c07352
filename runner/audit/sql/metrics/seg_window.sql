-- The whole audit's time span (metrics/seg_window_parts.sql): the leakage timeline and the TTL sweep sample it, the
-- summary reports it. One row.
CREATE OR REPLACE TEMP TABLE _seg_window AS
SELECT min(t0) AS t0, max(t1) AS t1, sum(n) AS n, sum(active_session_s) AS active_session_s
FROM _seg_window_parts;
