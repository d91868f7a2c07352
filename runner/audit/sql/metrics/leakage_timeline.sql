-- KV bytes held over time with no eviction, split into active and idle, sampled at $buckets evenly
-- spaced instants across the log. Each resident span adds its bytes when it starts and removes them when
-- it ends; the value at a sample is the running sum of everything that started/ended before it.
INSERT INTO token_leakage BY NAME
WITH win AS (
  SELECT t0, (t1 - t0) / $buckets AS w FROM _seg_window
),
b AS (  -- metrics/leakage_timeline_parts.sql, summed over the shares of the segments
  SELECT k, sum(held) AS held, sum(idle) AS idle, sum(n_held) AS n_held, sum(n_idle) AS n_idle
  FROM _timeline_parts GROUP BY k
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
