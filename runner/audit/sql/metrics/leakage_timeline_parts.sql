-- The bytes that start and stop being held (or idle) in each sample interval: sums over segments, so the
-- whole audit's are the sums of its shares' (runner/audit/distributed.py). The interval of an instant t is
-- k = floor((t - t0) / w), t0 and w from the WHOLE audit's span (_seg_window).
CREATE OR REPLACE TEMP TABLE _timeline_parts AS
WITH win AS (
  SELECT t0, (t1 - t0) / $buckets AS w FROM _seg_window
),
ev AS (
  SELECT t_start AS t, kv_bytes AS held, 0.0 AS idle, 1 AS n_held, 0 AS n_idle FROM _seg WHERE t_end > t_start
  UNION ALL
  SELECT t_end, -kv_bytes, 0.0, -1, 0 FROM _seg WHERE t_end > t_start
  UNION ALL
  SELECT t_idle, 0.0, kv_bytes, 0, 1 FROM _seg WHERE t_end > greatest(t_idle, t_start)
  UNION ALL
  SELECT t_end, 0.0, -kv_bytes, 0, -1 FROM _seg WHERE t_end > greatest(t_idle, t_start)
),
b AS (
  SELECT least($buckets, greatest(0, floor((t - win.t0) / win.w)))::INTEGER AS k,
         sum(held) AS held, sum(idle) AS idle, sum(n_held)::BIGINT AS n_held, sum(n_idle)::BIGINT AS n_idle
  FROM ev, win WHERE win.w > 0 GROUP BY k
)
SELECT * FROM b;
