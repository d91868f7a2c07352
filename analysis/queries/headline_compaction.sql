-- Headline: the best single-launch gather (triton where it ran, else batched) at the largest workload,
-- against the copy roof of the same size, naive beside it, and batched's gain over naive at the smallest,
-- per run. A row above 105% of its roof is a measurement error and is said to be one, never headlined; a
-- wide timing spread is "too noisy to say", its numbers beside it.
WITH c AS (SELECT * FROM compaction),
ends AS (SELECT run_id, max(bytes_moved) AS big, min(bytes_moved) AS small FROM c GROUP BY run_id),
best AS (  -- per run, at the largest size: triton if it ran, else batched
  SELECT c.run_id, arg_min(c.method, CASE c.method WHEN 'triton' THEN 0 ELSE 1 END) AS method
  FROM compaction_at_largest() c
  WHERE c.method IN ('triton', 'batched') GROUP BY c.run_id
)
SELECT e.run_id,
       CASE WHEN coalesce(bb.over_roof, false)
            THEN printf('KV compaction on %s: %s timed at %.0f%% of the same-size copy roof at %s moved: above 105%%, flagged as a measurement error',
                        r.device_name, bb.method, 100 * bb.pct_of_roof, bytes3(e.big))
            WHEN bb.spread_wide OR nb.spread_wide OR bb.pct_of_roof < 0
            THEN printf('KV compaction on %s at %s moved: too noisy to say (%s %.1f GB/s = %.0f%% of the same-size copy roof, naive %.1f GB/s, with a wide timing spread: see the page)',
                        r.device_name, bytes3(e.big), bb.method, bb.gbs, 100 * bb.pct_of_roof, nb.gbs)
            ELSE printf('KV compaction on %s: %s %.1f GB/s = %.0f%% of the %s copy roof (%.1f GB/s) at %s moved (naive %.1f GB/s, %.0f%%)%s; batched %.2f× faster than naive at %s',
                        r.device_name, bb.method, bb.gbs, 100 * bb.pct_of_roof,
                        CASE WHEN bb.roof_basis = 'same-size copy roof' THEN 'same-size' ELSE 'measured' END,
                        bb.roof_gbs, bytes3(e.big), nb.gbs, 100 * nb.pct_of_roof,
                        coalesce(printf(', %.0f%% of the device copy roof (%.1f GB/s, one large copy alone)',
                                        100 * bb.gbs / dc.roof_gbs, dc.roof_gbs), ''),
                        ns.time_ms / bs.time_ms, bytes3(e.small)) END
         AS finding,
       100 * bb.pct_of_roof AS value,
       CASE WHEN bb.roof_basis = 'same-size copy roof' THEN '% of same-size copy roof' ELSE '% of copy roof' END AS unit,
       'compaction.html' AS page
FROM ends e JOIN runs r USING (run_id)
JOIN best USING (run_id)
LEFT JOIN device_ceilings dc ON dc.run_id = e.run_id
JOIN compaction_at_largest() bb ON bb.run_id = e.run_id AND bb.method = best.method
JOIN compaction_at_largest() nb ON nb.run_id = e.run_id AND nb.method = 'naive'
JOIN c bs ON bs.run_id = e.run_id AND bs.bytes_moved = e.small AND bs.method = 'batched'
JOIN c ns ON ns.run_id = e.run_id AND ns.bytes_moved = e.small AND ns.method = 'naive'
ORDER BY e.run_id;
