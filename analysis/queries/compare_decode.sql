-- Comparison metrics, decode: the step time per shape (for run-to-run changes) and the best achieved
-- bandwidth as % of the roof and of the theoretical peak (normalised, comparable across devices). Eager
-- steps keep their old metric names (comparable with runs before the modes); other modes are named.
SELECT 'decode' AS topic,
       format('decode step{}, prefix {} x batch {}', CASE WHEN coalesce(mode, 'eager') = 'eager' THEN ''
              ELSE format(' ({})', mode) END, prefix_len, batch_size) AS metric, run_id,
       step_ms AS value, 'ms' AS unit, 'lower' AS better, p25_ms AS p25, p75_ms AS p75, false AS summary,
       'decode.html' AS page
FROM decode_cost
UNION ALL
SELECT 'decode', 'decode, best achieved bandwidth', run_id, max(achieved_gbs), 'GB/s', 'higher', NULL, NULL, true,
       'decode.html'
FROM decode_cost GROUP BY run_id
UNION ALL
-- named after the roof it divides by (rows since the roof curve: the same-size read roof), and never a noisy
-- or over-roof point: the best of many noisy steps would be the luckiest one
SELECT 'decode', format('decode, best % of {}', CASE WHEN any_value(roof_basis) = 'same-size read roof'
                                                     THEN 'same-size read roof' ELSE 'copy roof' END),
       run_id, 100 * max(pct_of_roof), '% of roof', 'higher', NULL, NULL, true, 'decode.html'
FROM decode_cost WHERE NOT coalesce(spread_wide, false) AND NOT coalesce(over_roof, pct_of_roof > 1.05, false)
GROUP BY run_id HAVING max(pct_of_roof) IS NOT NULL
UNION ALL
SELECT 'decode', 'decode, best % of peak', run_id, 100 * max(pct_of_peak), '% of peak', 'higher', NULL, NULL,
       true, 'decode.html'
FROM decode_cost GROUP BY run_id HAVING max(pct_of_peak) IS NOT NULL
ORDER BY ALL;
