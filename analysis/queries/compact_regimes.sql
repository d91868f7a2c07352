-- Small (< 5 MB of live KV) and large (> 10 MB) regimes per run and method, the seed's split, and where
-- the regimes cross: the smallest workload at which naive gets within 10% of batched (launches stop
-- mattering) and at which batched first reaches half the copy roof. Shares of roof are same-size ones;
-- "large" and "best" count only DRAM-sized workloads (>= 4x LLC/L2 moved; > 10 MB for rows older than
-- schema 3), and no aggregate uses a row flagged above 105% of its roof.
WITH c AS (SELECT * FROM compaction WHERE NOT coalesce(over_roof, false)),
regimes AS (
  SELECT run_id, method,
         median(gbs) FILTER (WHERE kv_bytes < 5e6) AS small_gbs,
         median(gbs) FILTER (WHERE kv_bytes > 10e6 AND coalesce(dram_sized, true)) AS large_gbs,
         max(gbs) FILTER (WHERE coalesce(dram_sized, true)) AS best_gbs,
         arg_max(bytes_moved, gbs) FILTER (WHERE coalesce(dram_sized, true)) AS best_bytes_moved,
         max(pct_of_peak) FILTER (WHERE coalesce(dram_sized, true)) AS best_pct_of_peak,
         max(pct_of_roof) FILTER (WHERE coalesce(dram_sized, true)) AS best_pct_of_roof,
         median(pct_of_roof) FILTER (WHERE kv_bytes < 5e6) AS small_pct_of_roof,
         median(pct_of_roof) FILTER (WHERE kv_bytes > 10e6 AND coalesce(dram_sized, true)) AS large_pct_of_roof,
         count(*) FILTER (WHERE kv_bytes < 5e6) AS n_small,
         count(*) FILTER (WHERE kv_bytes > 10e6 AND coalesce(dram_sized, true)) AS n_large,
         bool_and(correct) AS all_correct
  FROM c GROUP BY run_id, method
),
pairs AS (
  SELECT b.run_id, b.bytes_moved, b.gbs AS batched_gbs, n.gbs AS naive_gbs, b.pct_of_roof AS batched_pct_of_roof
  FROM c b JOIN c n ON n.run_id = b.run_id AND n.bytes_moved = b.bytes_moved AND n.method = 'naive'
  WHERE b.method = 'batched'
),
cross_points AS (
  SELECT run_id,
         min(bytes_moved) FILTER (WHERE naive_gbs >= 0.9 * batched_gbs) AS naive_catches_up_bytes,
         min(bytes_moved) FILTER (WHERE batched_pct_of_roof >= 0.5) AS batched_half_roof_bytes
  FROM pairs GROUP BY run_id
)
SELECT g.run_id, r.device_name, g.method, g.small_gbs, g.large_gbs, g.large_gbs / g.small_gbs AS large_over_small,
       g.small_pct_of_roof, g.large_pct_of_roof, g.best_gbs, g.best_bytes_moved, g.best_pct_of_peak,
       g.best_pct_of_roof, g.n_small, g.n_large, g.all_correct, x.naive_catches_up_bytes, x.batched_half_roof_bytes
FROM regimes g JOIN runs r USING (run_id) LEFT JOIN cross_points x USING (run_id)
ORDER BY g.run_id, g.method;
