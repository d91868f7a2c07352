-- Headline: compaction and decode at once against the longer of the two alone, or the flagged violation of
-- the sanity bound when the timing cannot be right (same derivation as interference_summary.sql).
WITH p AS (SELECT *, flagged_by_experiment AS flagged FROM interference_per_run()),
s AS (
  SELECT p.*, greatest(compact_ms, decode_ms) AS longer_ms,
         both_ms < 0.95 * greatest(compact_ms, decode_ms)
           OR coalesce(both_ms < 0.9 * both_bytes / (CASE WHEN roof_gbs IS NOT NULL THEN greatest(roof_gbs,
                compact_bytes / (compact_ms * 1e6), decode_bytes / (decode_ms * 1e6)) END * 1e6), false)
           OR coalesce(flagged, false) AS violated
  FROM p
)
SELECT s.run_id,
       CASE WHEN violated
            THEN format('Compaction + decode on {} ({}) timed {} ms, below the sanity bound (longer part alone {} ms): flagged as a measurement error, not a speed-up.',
                        r.device_name, concurrency, sig3(both_ms), sig3(longer_ms))
            ELSE format('Compaction moving {} beside {} decode step{} of {} on {} ({}): {} ms together vs {} ms compaction and {} ms decode alone, {:.2f}× the longer part.',
                        bytes3(compact_bytes), decode_steps, CASE WHEN decode_steps = 1 THEN '' ELSE 's' END, r.model, r.device_name, concurrency, sig3(both_ms),
                        sig3(compact_ms), sig3(decode_ms), both_ms / longer_ms)
                 || coalesce(CASE WHEN balanced AND (compact_bw_lost < 0 OR compact_bw_lost > 1 OR decode_inflation < 0.95)
                    THEN format(' With the parts balanced ({:.2f}×), the contention figures are too noisy to say (decode inflated {:.2f}×, compaction bandwidth lost {:.0f}%: outside what running together can do).',
                                balance_ratio, decode_inflation, 100 * compact_bw_lost)
                    WHEN balanced
                    THEN format(' With the parts balanced ({:.2f}×, decode as {}), running together inflated the decode part {:.2f}× and cost compaction {:.0f}% of its bandwidth.',
                                balance_ratio, decode_mode, decode_inflation, 100 * compact_bw_lost)
                    ELSE format(' The parts were not balanced ({:.2f}×, outside 0.5–2×), so this run cannot show contention.', balance_ratio) END, '') END AS finding,
       (both_ms / longer_ms)::DOUBLE AS value, 'x the longer part alone' AS unit, 'interference.html' AS page
FROM s JOIN runs r USING (run_id)
ORDER BY s.run_id;
