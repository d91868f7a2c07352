-- Comparison metrics, device ceilings: the measured copy roof (with its spread) and the theoretical peak.
SELECT 'ceilings' AS topic, 'copy roof' AS metric, run_id, roof_gbs AS value, 'GB/s' AS unit, 'higher' AS better,
       roof_p25_gbs AS p25, roof_p75_gbs AS p75, true AS summary, NULL AS page
FROM device_ceilings
UNION ALL
SELECT 'ceilings', 'theoretical peak', run_id, peak_gbs, 'GB/s', NULL, NULL, NULL, true, NULL
FROM device_ceilings WHERE peak_gbs IS NOT NULL
UNION ALL
SELECT 'ceilings', 'copy roof, % of peak', run_id, 100 * roof_gbs / peak_gbs, '% of peak', 'higher', NULL, NULL, true,
       NULL
FROM device_ceilings WHERE peak_gbs IS NOT NULL
ORDER BY ALL;
