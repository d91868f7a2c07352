-- Headline: batched compaction at the largest workload against the copy roof, and its gain over naive
-- at the smallest, per run.
WITH c AS (SELECT * FROM kv_compact_v2),
ends AS (SELECT run_id, max(bytes_moved) AS big, min(bytes_moved) AS small FROM c GROUP BY run_id)
SELECT e.run_id,
       printf('Batched KV compaction on %s: %.1f GB/s = %.0f%% of the copy roof at %.0f MB moved (naive %.1f GB/s); %.1fx faster than naive at %.2f MB',
              r.device_name, bb.gbs, 100 * bb.pct_of_roof, e.big / 1e6, nb.gbs, ns.time_ms / bs.time_ms, e.small / 1e6)
         || CASE WHEN bb.spread_wide OR nb.spread_wide THEN ' (wide timing spread: see the page)' ELSE '' END AS finding,
       100 * bb.pct_of_roof AS value, '% of copy roof' AS unit, 'compaction.html' AS page
FROM ends e JOIN runs r USING (run_id)
JOIN c bb ON bb.run_id = e.run_id AND bb.bytes_moved = e.big AND bb.method = 'batched'
JOIN c nb ON nb.run_id = e.run_id AND nb.bytes_moved = e.big AND nb.method = 'naive'
JOIN c bs ON bs.run_id = e.run_id AND bs.bytes_moved = e.small AND bs.method = 'batched'
JOIN c ns ON ns.run_id = e.run_id AND ns.bytes_moved = e.small AND ns.method = 'naive'
ORDER BY e.run_id;
