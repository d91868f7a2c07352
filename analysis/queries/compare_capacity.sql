-- Comparison metrics, pressure: how many requests each run admitted per sequence length before it stopped (at
-- its request cap, its time budget or its memory ceiling: the pressure page says which), not how many fit.
SELECT 'pressure' AS topic, format('requests admitted before the run stopped, {:,}-token requests', seq_len) AS metric, run_id,
       max_requests_measured::DOUBLE AS value, 'requests' AS unit, 'higher' AS better, NULL::DOUBLE AS p25,
       NULL::DOUBLE AS p75, true AS summary, 'pressure.html' AS page
FROM concurrent_capacity
ORDER BY ALL;
