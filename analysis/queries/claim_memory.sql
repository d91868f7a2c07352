-- Claims ledger, memory: the seed profiler's KV-size formula and its GPT-2 figures, checked against the
-- cache tensors each run measured (cache_tensors, kv_per_layer) and the allocator deltas (allocator_memory).
-- Head counts: the cache tensors give KV heads and head dim (k_shape = batch x kv_heads x seq x head_dim);
-- the attention-head count the seed's formula uses comes from cache_tensors.n_heads when that column
-- exists (read through to_json so this query runs on DBs without it) or the crossover experiment's row
-- for the run's own model.
WITH shape AS (
  SELECT run_id,
         max(split_part(k_shape, 'x', 2)::INTEGER) AS n_kv_heads,
         max(split_part(k_shape, 'x', 4)::INTEGER) AS head_dim
  FROM kv_per_layer GROUP BY run_id
),
heads_from_memory AS (
  SELECT run_id, max((to_json(m) ->> 'n_heads')::INTEGER) AS n_heads FROM cache_tensors m GROUP BY run_id
),
heads_from_crossover AS (
  SELECT c.run_id, max(c.n_heads) AS n_heads
  FROM crossover c JOIN runs r ON r.run_id = c.run_id AND r.model = c.model
  WHERE c.source = 'measured' GROUP BY c.run_id
),
per_run AS (  -- what the cache adds per token (kv_growth: a hybrid's constant state apart), and its layers' kinds
  SELECT g.run_id, r.model, r.dtype, g.per_token AS measured_bpt, g.formula_bytes_per_token AS formula_bpt,
         g.n_layers, s.n_kv_heads, s.head_dim, dtype_bytes(r.dtype) AS dtype_bytes,
         coalesce(hm.n_heads, hc.n_heads) AS n_heads, g.mla, g.has_state, g.windowed, g.n_attention_layers,
         g.constant_bytes
  FROM kv_growth() g
  JOIN runs r USING (run_id)
  JOIN shape s USING (run_id)
  LEFT JOIN heads_from_memory hm USING (run_id)
  LEFT JOIN heads_from_crossover hc USING (run_id)
),
spread AS (  -- bytes/token across every sequence length and batch a run measured
  SELECT run_id, min(bytes_per_token) AS min_bpt, max(bytes_per_token) AS max_bpt, bool_and(match) AS all_match,
         count(*) AS n_shapes, min(seq_len) AS min_seq, max(seq_len) AS max_seq
  FROM cache_tensors GROUP BY run_id
),
gpt2 AS (
  SELECT * FROM per_run WHERE model = 'gpt2'
),
allocator AS (
  SELECT run_id, min(bytes_per_token / formula_bytes_per_token) AS min_ratio,
         max(bytes_per_token / formula_bytes_per_token) AS max_ratio,
         bool_and(cache_only_delta_bytes = expected_kv_bytes) AS cache_only_exact
  FROM allocator_memory GROUP BY run_id
),
claims AS (
  -- 1. The formula, with the attention-head count where the cache holds KV heads. It describes K and V per head
  -- on every layer: a latent cache (MLA) or layers with a fixed state (hybrids) are not of that form.
  SELECT 'memory-formula' AS claim_id, 1 AS ord, run_id,
         CASE WHEN mla
                THEN format('{:,} B/token measured: one latent of {:,} values per layer; the profiler write-up''s formula counts K and V per head',
                            measured_bpt::BIGINT, (measured_bpt / (n_layers * dtype_bytes))::BIGINT)
              ELSE format('{:,} B/token {}; the profiler write-up''s formula gives {}', measured_bpt::BIGINT,
                          CASE WHEN has_state THEN format('growth measured (+ {} of fixed state per request)', bytes3(constant_bytes))
                               ELSE 'measured' END,
                          CASE WHEN n_heads IS NULL THEN 'n/a (head count not recorded)'
                               ELSE format('{:,}', 2 * n_layers * n_heads * head_dim * dtype_bytes) END) END AS measured_value,
         CASE WHEN mla OR has_state THEN $refuted
              WHEN n_heads IS NULL THEN $not_measured
              WHEN measured_bpt = 2 * n_layers * n_heads * head_dim * dtype_bytes THEN $confirmed
              ELSE $refuted END AS verdict,
         CASE WHEN mla
                THEN format('{} uses multi-head latent attention: each of its {} layers caches one compressed latent of {:,} values per token, shared by all {} heads, not K and V per head, so the n_heads x d_head formula does not describe it',
                            model, n_layers, (measured_bpt / (n_layers * dtype_bytes))::BIGINT, coalesce(n_heads::VARCHAR, 'its'))
              WHEN has_state
                THEN format('{} is a hybrid: {} of its {} layers are attention whose cache grows per token ({} KV heads x {} dims); the other {} keep a fixed-size state that does not grow, so a formula over every layer and every head{}',
                            model, n_attention_layers, n_layers, n_kv_heads, head_dim, n_layers - n_attention_layers,
                            CASE WHEN n_heads IS NULL THEN ' does not describe it'
                                 ELSE format(' over-counts {}x', round(2 * n_layers * n_heads * head_dim * dtype_bytes / measured_bpt, 1)) END)
              WHEN n_heads IS NULL THEN format('{} caches {} KV heads x {} dims x {} layers; its attention-head count is not in this DB, so the n_heads form cannot be checked', model, n_kv_heads, head_dim, n_layers)
              WHEN n_heads = n_kv_heads AND measured_bpt = 2 * n_layers * n_heads * head_dim * dtype_bytes
                THEN format('{}: every attention head has its own K/V (n_heads = n_kv_heads = {}), so the formula holds exactly', model, n_heads)
              WHEN n_heads <> n_kv_heads
                THEN format('{} uses grouped-query attention: the cache holds {} KV heads, not {} attention heads, so the profiler write-up''s formula over-counts {}x; use n_kv_heads', model, n_kv_heads, n_heads, round(n_heads / n_kv_heads, 2))
              ELSE format('measured {:,} B/token differs from the formula for {}', measured_bpt::BIGINT, model) END AS reasoning
  FROM per_run
  UNION ALL
  -- 2. The seed's GPT-2 arithmetic, checked exactly (KB there means 1,024 bytes).
  SELECT 'memory-gpt2-arithmetic', 2, NULL,
         format('2 x 12 x 12 x 64 x 2 = {:,} B = {} KiB', 2 * 12 * 12 * 64 * 2, (2 * 12 * 12 * 64 * 2) // 1024),
         CASE WHEN 2 * 12 * 12 * 64 * 2 = 36 * 1024 THEN $confirmed ELSE $refuted END,
         'arithmetic, checked exactly: 36,864 bytes is 36 KiB (36.9 kB in SI units); needs no run'
  UNION ALL
  -- 3. GPT-2's measured cache at 2-byte elements: a run at another dtype is scaled by element size (cache sizes
  -- are tensor shapes times element bytes, so the scaling is exact), as the pressure claims scale theirs.
  SELECT 'memory-gpt2-measured', 3, run_id,
         CASE WHEN dtype_bytes = 2 THEN format('{:,} B/token at {}', measured_bpt::BIGINT, dtype)
              ELSE format('{:,} B/token at {} = {:,} B/token at 2 B/element', measured_bpt::BIGINT, dtype,
                          (measured_bpt * 2 / dtype_bytes)::BIGINT) END,
         CASE WHEN measured_bpt * 2 / dtype_bytes <> 36 * 1024 THEN $refuted ELSE $confirmed END,
         CASE WHEN measured_bpt * 2 / dtype_bytes <> 36 * 1024
                THEN format('measured {:,} B/token at {} bytes per element, not 36 KiB at 2', measured_bpt::BIGINT, dtype_bytes)
              WHEN dtype_bytes = 2 THEN 'the cache tensors of GPT-2 at 2 bytes per element hold exactly 36,864 B per token'
              ELSE format('the cache tensors of GPT-2 at {} ({} bytes per element) hold exactly {:,} B per token: 36,864 B at the profiler write-up''s 2 bytes per element', dtype, dtype_bytes, measured_bpt::BIGINT) END
  FROM gpt2
  UNION ALL
  -- 4. "The same per-token size at ALL sequence lengths": a property of every full-attention model.
  SELECT 'memory-all-lengths', 4, s.run_id,
         CASE WHEN s.min_bpt = s.max_bpt THEN format('{:,} B/token at all {} shapes (seq {}-{})', s.min_bpt::BIGINT, s.n_shapes, s.min_seq, s.max_seq)
              ELSE format('{:,}-{:,} B/token over {} shapes (seq {}-{})', s.min_bpt::BIGINT, s.max_bpt::BIGINT, s.n_shapes, s.min_seq, s.max_seq) END,
         CASE WHEN NOT s.all_match THEN $refuted
              WHEN s.min_bpt = s.max_bpt THEN $confirmed ELSE $expected END,
         CASE WHEN NOT s.all_match THEN 'some shapes do not match the formula (see the memory page)'
              WHEN s.min_bpt = s.max_bpt THEN format('{}: the cache grows exactly linearly and matches the formula at every shape', r.model)
              WHEN g.has_state AND g.windowed
                THEN format('{} has sliding-window layers (a capped window) and layers with a fixed-size state: a short prefill spreads the state over few tokens and the windows stop growing, so bytes/token falls with length, exactly as the formula predicts', r.model)
              WHEN g.has_state
                THEN format('{} keeps a fixed-size state per request in its linear-attention or Mamba layers: a short prefill spreads it over few tokens, so bytes/token falls with length toward the {:,} B its attention layers add per token, exactly as the formula predicts', r.model, g.per_token::BIGINT)
              ELSE format('{} has sliding-window layers: they keep a capped window, so bytes/token falls with length, exactly as the capped formula predicts', r.model) END
  FROM spread s JOIN runs r USING (run_id) LEFT JOIN kv_growth() g USING (run_id)
  UNION ALL
  -- 5. v1's allocator before/after delta vs v2's direct tensor measurement.
  SELECT 'memory-v1-vs-v2', 5, run_id,
         format('allocator delta = {}-{}x the cache right after prefill', round(min_ratio, 2), round(max_ratio, 2)),
         CASE WHEN max_ratio > 1.0 THEN $confirmed ELSE $refuted END,
         CASE WHEN max_ratio > 1.0 THEN 'the before/after delta also counts the live logits (batch x seq x vocab), so only the direct tensor sum is the cache'
              ELSE 'the allocator delta equals the cache on this run' END
  FROM allocator
),
unmeasured AS (
  SELECT * FROM (VALUES
    ('memory-gpt2-measured', 3, 'no run of the gpt2 architecture in this DB'),
    ('memory-v1-vs-v2', 5, 'needs the CUDA caching allocator (iteration 1); no run in this DB had one')
  ) AS u(claim_id, ord, reasoning)
  WHERE NOT EXISTS (SELECT 1 FROM claims c WHERE c.claim_id = u.claim_id)
),
text AS (
  SELECT * FROM (VALUES
    ('memory-formula', 'KV bytes = 2 x n_layers x n_heads x d_head x dtype_bytes', '2 x n_layers x n_heads x d_head x dtype_bytes'),
    ('memory-gpt2-arithmetic', 'GPT-2: 2 x 12 x 12 x 64 x 2 = 36 KB per token', '36 KB/token'),
    ('memory-gpt2-measured', 'GPT-2 measures 36 KB of KV cache per token', '36.000 KB/token'),
    ('memory-all-lengths', 'Measured bytes/token are the same for ALL sequence lengths (match=YES)', '36.000 KB/token at every length'),
    ('memory-v1-vs-v2', 'Direct tensor measurement (v2) is more accurate than allocator before/after deltas (v1)', 'v2 "most accurate"')
  ) AS t(claim_id, claim, seed_value)
),
{include:_claim_ledger}
SELECT claim_id, 'profiler seed' AS source, claim, seed_value, 'RTX 2070 (GPT-2, float16)' AS seed_hardware,
       -- Cache sizes are tensor shapes times element bytes: exact on any device. The allocator is not.
       CASE WHEN claim_id = 'memory-v1-vs-v2' THEN 'measurement' ELSE 'arithmetic' END AS basis,
       true AS claim_on_gpu, run_id, measured_value, verdict, reasoning
FROM ledger
ORDER BY ord, run_id NULLS FIRST;
