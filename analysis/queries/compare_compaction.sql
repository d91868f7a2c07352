-- Comparison metrics, compaction: time per (method, bytes moved) for run-to-run changes, and per method
-- the best bandwidth as GB/s and % of the theoretical peak (never from a row flagged above its roof or with a
-- wide spread), and % of the same-size copy roof at the largest workload (compaction_at_largest(), the row
-- the compaction page headlines; none where that row is flagged or noisy).
SELECT 'compaction' AS topic, format('compaction {}, {:,} B moved', method, bytes_moved) AS metric, run_id,
       time_ms AS value, 'ms' AS unit, 'lower' AS better, p25_ms AS p25, p75_ms AS p75, false AS summary,
       'compaction.html' AS page
FROM compaction
UNION ALL
SELECT 'compaction', format('compaction {}, best bandwidth', method), run_id, max(gbs), 'GB/s', 'higher', NULL, NULL,
       true, 'compaction.html'
FROM compaction WHERE NOT coalesce(over_roof, false) AND NOT coalesce(spread_wide, false)
GROUP BY run_id, method
UNION ALL
-- % of roof at the largest workload (the DRAM figure), not the best size: a small workload that fits in the
-- cache would flatter it; a row above 105% of its same-size roof is an error and a noisy row is not compared
SELECT 'compaction', format('compaction {}, % of same-size copy roof at the largest workload', method), run_id,
       100 * pct_of_roof, '% of roof', 'higher', NULL, NULL, true, 'compaction.html'
FROM compaction_at_largest()
WHERE NOT coalesce(over_roof, false) AND NOT coalesce(spread_wide, false) AND pct_of_roof IS NOT NULL
UNION ALL
SELECT 'compaction', format('compaction {}, best % of peak', method), run_id, 100 * max(pct_of_peak), '% of peak',
       'higher', NULL, NULL, true, 'compaction.html'
FROM compaction WHERE NOT coalesce(over_roof, false) AND NOT coalesce(spread_wide, false)
GROUP BY run_id, method HAVING max(pct_of_peak) IS NOT NULL
ORDER BY ALL;
