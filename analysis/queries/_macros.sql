-- Formatting helpers every named query may use (created on the connection before the first query runs).
-- sig3(x): a number as a reader wants it in a sentence, about three significant digits and never an
-- exponent: 339 · 52.5 · 7.82 · 0.0123 (format's {:.3g} would write 1.23e+03).
CREATE OR REPLACE TEMP MACRO sig3(x) AS
  CASE WHEN x IS NULL THEN '–'
       WHEN abs(x) >= 100 THEN format('{:,.0f}', x)
       WHEN abs(x) >= 10 THEN format('{:.1f}', x)
       WHEN abs(x) >= 1 THEN format('{:.2f}', x)
       ELSE format('{:.3g}', x) END;

-- bytes3(x): bytes as the pages' tables print them (fmt_bytes in analysis/site/formats.py): binary units,
-- about three significant digits: 912 B · 36 KiB · 1,008 KiB · 1.50 MiB · 1.97 GiB. Headlines use it so a
-- sentence and the table under it name the same figure the same way (a headline said "2,016 MiB" over a
-- table's "1.97 GiB"). One policy written in two languages: tests/test_formats.py checks they agree.
-- Dividing by a power of two is exact, so x / 1024^k is the figure fmt_bytes reaches by dividing k times.
CREATE OR REPLACE TEMP MACRO bytes3_in(v, unit) AS
  CASE WHEN unit = 'B' OR abs(v) >= 100 OR v = floor(v) THEN format('{:,.0f} {}', v, unit)
       WHEN abs(v) >= 10 THEN format('{:.1f} {}', v, unit)
       ELSE format('{:.2f} {}', v, unit) END;
CREATE OR REPLACE TEMP MACRO bytes3(x) AS
  CASE WHEN x IS NULL THEN '–'
       WHEN abs(x) < 1024 THEN bytes3_in(CAST(x AS DOUBLE), 'B')
       WHEN abs(x) < 1024 ^ 2 THEN bytes3_in(x / 1024, 'KiB')
       WHEN abs(x) < 1024 ^ 3 THEN bytes3_in(x / 1024 ^ 2, 'MiB')
       WHEN abs(x) < 1024 ^ 4 THEN bytes3_in(x / 1024 ^ 3, 'GiB')
       ELSE bytes3_in(x / 1024 ^ 4, 'TiB') END;

-- dtype_bytes(dtype): bytes per element of a run's dtype (NULL for one it does not know).
CREATE OR REPLACE TEMP MACRO dtype_bytes(dtype) AS
  CASE WHEN dtype IN ('float16', 'bfloat16') THEN 2 WHEN dtype = 'float32' THEN 4
       WHEN dtype LIKE 'float8%' THEN 1 WHEN dtype = 'float64' THEN 8 END;

-- kv_growth(): per run, what the KV cache adds per token: its growth between the two longest prefills below
-- every window (same batch), so the constant state of a hybrid model (linear attention, Mamba) is said apart
-- (constant_bytes per request) rather than spread over a short prefill; a run with one such length, its bytes
-- per token. Also the layer kinds the run's cache held (kv_per_layer.kind; NULL in DBs before schema 7 counts
-- as plain attention). headline_memory.sql, claim_memory.sql and claim_token_article.sql read this one definition.
CREATE OR REPLACE TEMP MACRO kv_growth() AS TABLE
WITH uncapped AS (
  SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY seq_len DESC, batch_size DESC) AS rn
  FROM cache_tensors m WHERE cached_tokens = seq_len
    AND NOT EXISTS (SELECT 1 FROM kv_per_layer l  -- no layer holds fewer tokens than the prefill (a window)
                    WHERE l.run_id = m.run_id AND l.seq_len = m.seq_len AND l.batch_size = m.batch_size
                      AND l.cached_tokens < l.seq_len)
),
top AS (SELECT * FROM uncapped WHERE rn = 1),
prev AS (
  SELECT u.run_id, u.seq_len, u.kv_bytes,
         row_number() OVER (PARTITION BY u.run_id ORDER BY u.seq_len DESC) AS k
  FROM uncapped u JOIN top t ON u.run_id = t.run_id AND u.batch_size = t.batch_size AND u.seq_len < t.seq_len
),
kinds AS (
  SELECT run_id,
         bool_or(kind IN ('mla_latent', 'mla_per_head')) AS mla,
         bool_or(kind IN ('linear_state', 'mamba_state')) AS has_state,
         bool_or(kind IN ('sliding', 'chunked')) AS windowed,
         count(DISTINCT layer) FILTER (WHERE kind IS NULL OR kind IN ('full', 'sliding', 'chunked')) AS n_attention_layers
  FROM kv_per_layer GROUP BY run_id
),
g AS (
  SELECT t.run_id, t.kv_bytes, t.seq_len, t.batch_size, t.n_layers, t.formula_bytes_per_token,
         coalesce((t.kv_bytes - p.kv_bytes) / ((t.seq_len - p.seq_len) * t.batch_size), t.bytes_per_token) AS per_token
  FROM top t LEFT JOIN prev p ON p.run_id = t.run_id AND p.k = 1
)
SELECT g.*, greatest(0, round(g.kv_bytes - g.per_token * g.seq_len * g.batch_size) / g.batch_size)::BIGINT AS constant_bytes,
       coalesce(k.mla, false) AS mla, coalesce(k.has_state, false) AS has_state, coalesce(k.windowed, false) AS windowed,
       k.n_attention_layers
FROM g LEFT JOIN kinds k USING (run_id);

-- decode_eager_variation(): per run and batch, how much the eager decode step moves across prefix lengths and
-- what bounds it (decode_variation.sql shows it; claim_decode.sql judges the seed's claims on it). A table
-- macro, so the two read one definition.
CREATE OR REPLACE TEMP MACRO decode_eager_variation() AS TABLE
WITH d AS (SELECT * FROM decode_cost WHERE coalesce(mode, 'eager') = 'eager'),
per_batch AS (
  SELECT run_id, batch_size, count(*) AS n_prefixes, min(prefix_len) AS min_prefix, max(prefix_len) AS max_prefix,
         min(step_ms) AS min_step_ms, max(step_ms) AS max_step_ms,
         (max(step_ms) - min(step_ms)) / min(step_ms) AS variation,
         count(*) FILTER (WHERE prefix_len BETWEEN 64 AND 512) AS n_in_64_512,
         CASE WHEN count(*) FILTER (WHERE prefix_len BETWEEN 64 AND 512) >= 2 THEN
           (max(step_ms) FILTER (WHERE prefix_len BETWEEN 64 AND 512) - min(step_ms) FILTER (WHERE prefix_len BETWEEN 64 AND 512))
           / min(step_ms) FILTER (WHERE prefix_len BETWEEN 64 AND 512) END AS variation_64_512,
         arg_min(step_ms, prefix_len) AS step_ms_at_min_prefix,
         arg_min(pct_of_roof, prefix_len) AS pct_of_roof,
         arg_min(pct_of_peak, prefix_len) AS pct_of_peak,
         arg_min(achieved_gbs, prefix_len) AS achieved_gbs,
         arg_min(weights_floor_ms, prefix_len) AS weights_floor_ms,
         bool_or(spread_wide) AS any_wide
  FROM d GROUP BY run_id, batch_size
),
scaling AS (  -- step time at the largest batch over batch 1, at the smallest prefix both measured
  SELECT b1.run_id, bn.batch_size AS max_batch, bn.step_ms / b1.step_ms AS batch_scaling
  FROM d b1 JOIN d bn ON bn.run_id = b1.run_id AND bn.prefix_len = b1.prefix_len
  WHERE b1.batch_size = 1
    AND bn.batch_size = (SELECT max(batch_size) FROM d x WHERE x.run_id = b1.run_id)
    AND b1.prefix_len = (SELECT min(prefix_len) FROM d x WHERE x.run_id = b1.run_id AND x.batch_size = 1)
),
-- A larger batch does at least the work of a smaller one, and at most that work times the batch ratio: a
-- step that ran clearly faster at a larger batch (same prefix; more than 10% and below the smaller batch's
-- lower quartile, so a flat launch-bound step's jitter is not one), or that cost more than 1.25x the batch
-- ratio, says the timings are noise, and no bound is read from them (`first_inversion` names the pair).
inversions AS (
  SELECT run_id, arg_min(CASE WHEN step_ms < prev_ms
                              THEN printf('batch %d (%.2f ms) ran faster than batch %d (%.2f ms) at prefix %d',
                                          batch_size, step_ms, prev_batch, prev_ms, prefix_len)
                              ELSE printf('batch %d (%.2f ms) cost %.1fx batch %d (%.2f ms) at prefix %d, more than the %.0fx more work',
                                          batch_size, step_ms, step_ms / prev_ms, prev_batch, prev_ms, prefix_len,
                                          batch_size / prev_batch) END, batch_size) AS first_inversion
  FROM (SELECT run_id, prefix_len, batch_size, step_ms,
               lag(step_ms) OVER (PARTITION BY run_id, prefix_len ORDER BY batch_size) AS prev_ms,
               lag(batch_size) OVER (PARTITION BY run_id, prefix_len ORDER BY batch_size) AS prev_batch,
               lag(p25_ms) OVER (PARTITION BY run_id, prefix_len ORDER BY batch_size) AS prev_p25_ms
        FROM d)
  WHERE (step_ms < 0.9 * prev_ms AND step_ms < prev_p25_ms) OR step_ms > 1.25 * prev_ms * batch_size / prev_batch
  GROUP BY run_id
)
SELECT p.run_id, r.model, r.dtype, r.device_name, p.batch_size, p.n_prefixes, p.min_prefix, p.max_prefix,
       p.min_step_ms, p.max_step_ms, p.variation, p.n_in_64_512, p.variation_64_512, p.step_ms_at_min_prefix,
       p.achieved_gbs, p.pct_of_roof, p.pct_of_peak, p.weights_floor_ms,
       p.step_ms_at_min_prefix / p.weights_floor_ms AS times_weights_floor, s.max_batch, s.batch_scaling,
       CASE WHEN p.pct_of_roof > 1.05 OR p.pct_of_roof < 0 OR p.any_wide OR i.first_inversion IS NOT NULL
              THEN 'too noisy to say'
            WHEN p.pct_of_roof >= 0.5 THEN 'bandwidth-bound'
            WHEN s.max_batch > 1 AND (s.batch_scaling - 1) / (s.max_batch - 1) >= 0.5 THEN 'compute-bound'
            WHEN s.max_batch > 1 THEN 'launch/overhead-bound'
            ELSE 'not bandwidth-bound' END AS bound,
       p.any_wide, i.first_inversion
FROM per_batch p JOIN runs r USING (run_id) LEFT JOIN scaling s USING (run_id) LEFT JOIN inversions i USING (run_id);

-- interference_per_run(): interference pivoted to one row per run (each part alone and both at once,
-- their bytes, the balance and contention figures). interference_summary.sql derives the sanity bound from
-- it; claim_interference.sql and headline_interference.sql read the same row.
CREATE OR REPLACE TEMP MACRO interference_per_run() AS TABLE
  SELECT run_id,
         any_value(concurrency) AS concurrency,
         max(time_ms) FILTER (WHERE mode = 'compact') AS compact_ms,
         max(p25_ms) FILTER (WHERE mode = 'compact') AS compact_p25_ms,
         max(p75_ms) FILTER (WHERE mode = 'compact') AS compact_p75_ms,
         max(time_ms) FILTER (WHERE mode = 'decode') AS decode_ms,
         max(p25_ms) FILTER (WHERE mode = 'decode') AS decode_p25_ms,
         max(p75_ms) FILTER (WHERE mode = 'decode') AS decode_p75_ms,
         max(time_ms) FILTER (WHERE mode = 'both') AS both_ms,
         max(p25_ms) FILTER (WHERE mode = 'both') AS both_p25_ms,
         max(p75_ms) FILTER (WHERE mode = 'both') AS both_p75_ms,
         max(n) FILTER (WHERE mode = 'both') AS n,
         max(bytes_moved) FILTER (WHERE mode = 'both') AS both_bytes,
         max(compact_bytes) AS compact_bytes, max(decode_bytes) AS decode_bytes,
         max(gbs) FILTER (WHERE mode = 'compact') AS compact_gbs,
         max(pct_of_roof) FILTER (WHERE mode = 'compact') AS compact_pct_of_roof,
         any_value(roof_gbs) AS roof_gbs, any_value(peak_gbs) AS peak_gbs,
         bool_or(bound_violated) AS flagged_by_experiment,
         string_agg(bound_note, '; ') AS bound_notes,
         any_value(decode_steps) AS decode_steps, any_value(decode_batch) AS decode_batch,
         any_value(prefix_len) AS prefix_len, bool_and(correct) AS correct,
         any_value(decode_mode) AS decode_mode, max(balance_ratio) AS balance_ratio, bool_and(balanced) AS balanced,
         max(decode_in_both_ms) AS decode_in_both_ms, max(compact_in_both_ms) AS compact_in_both_ms,
         max(decode_inflation) AS decode_inflation, max(compact_bw_lost) AS compact_bw_lost
  FROM interference GROUP BY run_id;

-- compaction_at_largest(): every compaction row at its run's largest workload (most bytes moved), the one
-- size whose "% of the same-size copy roof" the compaction headline and the Compare page both report.
CREATE OR REPLACE TEMP MACRO compaction_at_largest() AS TABLE
  SELECT c.* FROM compaction c
  WHERE c.bytes_moved = (SELECT max(x.bytes_moved) FROM compaction x WHERE x.run_id = c.run_id);
