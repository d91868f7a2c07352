-- KV bytes held over time with no eviction, split into active and idle, sampled at $buckets evenly
-- spaced instants across the log. Each resident span adds its bytes when it starts and removes them when
-- it ends; the value at a sample is the running sum of everything that started/ended before it.
INSERT INTO token_leakage BY NAME
WITH win AS (
  SELECT min(t_start) AS t0, (max(t_end) - min(t_start)) / $buckets AS w FROM _seg
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
         sum(held) AS held, sum(idle) AS idle, sum(n_held) AS n_held, sum(n_idle) AS n_idle
  FROM ev, win WHERE win.w > 0 GROUP BY k
),
grid AS (
  SELECT range::INTEGER AS k FROM range(0, $buckets)
),
cum AS (
  SELECT g.k,
         sum(coalesce(b.held, 0)) OVER o AS held_bytes, sum(coalesce(b.idle, 0)) OVER o AS idle_bytes,
         sum(coalesce(b.n_held, 0)) OVER o AS sessions_held, sum(coalesce(b.n_idle, 0)) OVER o AS sessions_idle
  FROM grid g LEFT JOIN b USING (k)
  WINDOW o AS (ORDER BY g.k ROWS UNBOUNDED PRECEDING)
)
SELECT $audit_id AS audit_id, $run_id AS run_id, cum.k + 1 AS sample,
       make_timestamp(CAST((win.t0 + (cum.k + 1) * win.w) * 1e6 AS BIGINT)) AS t,
       (cum.k + 1) * win.w AS offset_s,
       greatest(held_bytes, 0) AS held_bytes, greatest(idle_bytes, 0) AS idle_bytes,
       sessions_held, sessions_idle
FROM cum, win
WHERE win.w > 0
ORDER BY sample;
