-- Headlines from token audits: each run's demo audit and every standalone audit (run_id NULL). A demo audit
-- prices generated traffic whose idle share is the generator's choice: a demonstration of the mechanism.
SELECT run_id,
       format('{} audit of {:,} calls {}: PCER {:.1f}%, and idle sessions hold {:.1f}% of all KV {}.',
              CASE WHEN run_id IS NULL THEN 'Traffic' ELSE 'Demo traffic' END, n_calls,
              CASE WHEN kv_bytes_per_token IS NULL THEN 'not priced in KV bytes (no --model)'
                   ELSE format('priced at {:,} B/token ({})', kv_bytes_per_token::BIGINT,
                               -- the dtype the figure is priced at, beside where it came from: a float32 run
                               -- measures twice this
                               CASE WHEN kv_bytes_source = 'given' THEN 'given with --kv-bytes-per-token'
                                    ELSE format('16-bit KV, {}', kv_bytes_source) END) END,
              100 * overall_pcer, 100 * leakage_index,
              CASE WHEN kv_bytes_per_token IS NULL THEN 'token-seconds' ELSE 'byte-seconds' END) AS finding,
       100 * leakage_index AS value, '% KV leaked' AS unit, 'audit.html' AS page,
       CASE WHEN run_id IS NOT NULL THEN 'generated demo traffic: its idle share is the generator''s choice, not a measurement' END AS demonstration
FROM audits
WHERE leakage_index IS NOT NULL
UNION ALL
SELECT p.run_id,
       format('Reusing a session''s cached prefix prefilled {} tokens instead of {} at turn {}: {:.0f}% less prefill time, logits within max |Δ| {:.2g} of recomputing.',
              s.computed_tokens, p.computed_tokens, p.turn, 100 * (1 - s.time_ms / p.time_ms), s.max_abs_logit_diff) AS finding,
       100 * (1 - s.time_ms / p.time_ms) AS value, '% prefill saved' AS unit, 'audit.html#prefix-reuse' AS page,
       NULL AS demonstration
FROM prefix_reuse p JOIN prefix_reuse s ON s.run_id = p.run_id AND s.turn = p.turn AND s.mode = 'session_prefix'
WHERE p.mode = 'recompute' AND s.logits_match
  -- a headline never rests on a noisy point: the last turn whose two timings both have a p25-p75 spread
  -- within 25% of their median (the site's wide-spread threshold)
  AND p.turn = (SELECT max(x.turn) FROM prefix_reuse x JOIN prefix_reuse y
                  ON y.run_id = x.run_id AND y.turn = x.turn AND y.mode = 'session_prefix'
                WHERE x.run_id = p.run_id AND x.mode = 'recompute'
                  AND (x.p75_ms - x.p25_ms) <= 0.25 * x.time_ms AND (y.p75_ms - y.p25_ms) <= 0.25 * y.time_ms)
ORDER BY run_id NULLS FIRST, finding;
