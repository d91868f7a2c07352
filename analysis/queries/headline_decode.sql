-- Headline: what bounds one decode step at batch 1, per run.
-- Eager is the headline (what the seed measured); the static / graph steps are named beside it.
WITH d AS (SELECT * FROM decode_cost WHERE coalesce(mode, 'eager') = 'eager'),
others AS (  -- batch 1, smallest prefix: every other mode's step against the same bandwidth floor
  SELECT o.run_id, string_agg(printf('%s %.2f ms (%.1f× the floor)', o.mode, o.step_ms, o.step_ms / o.bandwidth_floor_ms), ', '
                              ORDER BY o.mode) AS modes_txt
  FROM decode_cost o
  WHERE o.mode <> 'eager' AND o.batch_size = 1
    AND o.prefix_len = (SELECT min(prefix_len) FROM decode_cost x WHERE x.run_id = o.run_id AND x.batch_size = 1)
  GROUP BY o.run_id
),
b1 AS (
  SELECT run_id, arg_min(step_ms, prefix_len) AS step_ms, arg_min(pct_of_roof, prefix_len) AS pct_of_roof,
         arg_min(weights_floor_ms, prefix_len) AS floor_ms, min(prefix_len) AS prefix_len,
         (max(step_ms) - min(step_ms)) / min(step_ms) AS variation, min(prefix_len) AS lo, max(prefix_len) AS hi,
         bool_or(spread_wide) AS noisy, any_value(roof_basis) AS basis,
         coalesce(arg_min(over_roof, prefix_len), false) AS over_roof, coalesce(arg_min(dram_sized, prefix_len), true) AS dram
  FROM d WHERE batch_size = 1 GROUP BY run_id
),
v AS (SELECT run_id, bound, first_inversion FROM decode_eager_variation() WHERE batch_size = 1),
scale AS (
  SELECT b.run_id, max(b.batch_size) AS max_batch,
         arg_max(b.step_ms, b.batch_size) / any_value(one.step_ms) AS scaling
  FROM d b JOIN d one ON one.run_id = b.run_id AND one.batch_size = 1 AND one.prefix_len = b.prefix_len
  WHERE b.prefix_len = (SELECT min(prefix_len) FROM d x WHERE x.run_id = b.run_id AND x.batch_size = 1)
  GROUP BY b.run_id
)
SELECT b1.run_id,
       printf('%s eager decode step at batch 1 on %s: %.2f ms, %.1f%% of the %s (%.1f× the weights-only floor), %.1f%% variation over prefix %d-%d: %s',
              r.model, r.device_name, b1.step_ms, 100 * b1.pct_of_roof,
              CASE WHEN b1.basis = 'same-size read roof' THEN 'same-size read roof' ELSE 'copy roof' END,
              b1.step_ms / b1.floor_ms, 100 * b1.variation,
              b1.lo, b1.hi,
              CASE WHEN b1.over_roof THEN 'above 105% of its roof, flagged as a measurement error'
                   WHEN v.bound = 'too noisy to say'
                     THEN 'too noisy to say what bounds it (' || coalesce(v.first_inversion, 'the batch-1 timings have a wide spread') || ')'
                   WHEN b1.pct_of_roof >= 0.5 AND NOT b1.dram THEN 'its bytes fit in the last-level cache, so a cache figure, not a DRAM one'
                   WHEN b1.pct_of_roof >= 0.5 THEN 'bandwidth-bound'
                   WHEN s.max_batch > 1 AND (s.scaling - 1) / (s.max_batch - 1) >= 0.5 THEN 'compute-bound, not bandwidth-bound'
                   ELSE 'launch/overhead-bound, not bandwidth-bound' END)
         || coalesce('; ' || o.modes_txt, '')
         || CASE WHEN b1.noisy AND v.bound IS DISTINCT FROM 'too noisy to say' THEN ' (some timings have a wide spread: see the page)' ELSE '' END AS finding,
       100 * b1.pct_of_roof AS value,
       CASE WHEN b1.basis = 'same-size read roof' THEN '% of same-size read roof' ELSE '% of copy roof' END AS unit,
       'decode.html' AS page
FROM b1 JOIN runs r USING (run_id) LEFT JOIN scale s USING (run_id) LEFT JOIN others o USING (run_id)
LEFT JOIN v USING (run_id)
ORDER BY b1.run_id;
