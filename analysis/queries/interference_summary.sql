-- Per run: both at once against each part alone. The sanity bound is re-derived here from the stored
-- timings (not only read from the experiment's flag), on medians: `both` may not come in more than 5% below
-- the longer part alone, nor below 90% of its bytes over the bandwidth ceiling (the copy roof, or a part's
-- own GB/s where that beat the roof), with the experiment's tolerances.
-- slowdown_vs_longer: both / the longer alone (1.0 = perfect overlap; > 1 = interference);
-- vs_sum: both / (compact + decode) (1.0 = no overlap at all); overlap_saved_ms = sum - both.
-- Contention (schema 3): the parts' sizes are balanced (compact / decode alone in 0.5-2x, `balanced`), the
-- decode part runs in its fastest mode (`decode_mode`), and each part is timed inside `both`:
-- decode_inflation = decode in both / decode alone, compact_bw_lost = 1 - compact alone / compact in both.
WITH p0 AS (SELECT * FROM interference_per_run()),
c AS (  -- the bandwidth ceiling: the copy roof, or a part's own GB/s where that beat the roof
  SELECT p0.*, CASE WHEN roof_gbs IS NOT NULL
                    THEN greatest(roof_gbs, compact_bytes / (compact_ms * 1e6), decode_bytes / (decode_ms * 1e6)) END AS ceiling_gbs
  FROM p0
)
SELECT p.*, r.model, r.dtype, r.device_kind, r.device_name,
       greatest(compact_ms, decode_ms) AS longer_alone_ms,
       CASE WHEN compact_ms >= decode_ms THEN 'compact' ELSE 'decode' END AS longer_mode,
       both_ms / greatest(compact_ms, decode_ms) AS slowdown_vs_longer,
       both_ms / (compact_ms + decode_ms) AS vs_sum,
       compact_ms + decode_ms - both_ms AS overlap_saved_ms,
       both_ms / compact_ms AS both_over_compact,
       both_bytes / (ceiling_gbs * 1e6) AS both_roof_floor_ms,
       both_ms < 0.95 * greatest(compact_ms, decode_ms) AS faster_than_longer_alone,
       coalesce(both_ms < 0.9 * both_bytes / (ceiling_gbs * 1e6), false) AS faster_than_roof,
       both_ms < 0.95 * greatest(compact_ms, decode_ms)
         OR coalesce(both_ms < 0.9 * both_bytes / (ceiling_gbs * 1e6), false)
         OR coalesce(flagged_by_experiment, false) AS bound_violated
FROM c p JOIN runs r USING (run_id)
ORDER BY p.run_id;
