-- Comparison metrics, pressure: how many concurrent requests fit per sequence length.
SELECT 'pressure' AS topic, format('concurrent requests that fit, seq {}', seq_len) AS metric, run_id,
       max_requests_measured::DOUBLE AS value, 'requests' AS unit, 'higher' AS better, NULL::DOUBLE AS p25,
       NULL::DOUBLE AS p75, true AS summary, 'pressure.html' AS page
FROM kv_capacity_v3
ORDER BY ALL;
