-- One row per run and architecture: the single-request crossover, what it is at batch 64, how many
-- 512-token requests outweigh the weights, and the grouped-query factor against llama-2-7b (MHA) in the
-- same run. A NULL crossover means sliding windows cap the cache below the weights at that batch size.
WITH b AS (
  SELECT c.*, (c.n_heads / c.n_kv_heads) AS gqa_group
  FROM crossover c
),
one AS (SELECT * FROM b WHERE batch_size = 1),
b64 AS (SELECT run_id, model, source, crossover_tokens AS crossover_b64 FROM b WHERE batch_size = 64),
mha AS (SELECT run_id, crossover_tokens AS llama2_tokens FROM one WHERE model = 'llama-2-7b' AND source = 'formula'),
first_reached AS (
  SELECT run_id, model, source, min(batch_size) AS first_batch_reaching
  FROM b WHERE crossover_tokens IS NOT NULL GROUP BY ALL
)
SELECT o.run_id, o.model, o.source, o.dtype, o.parameters, o.weight_bytes, o.kv_bytes_per_token, o.n_layers,
       o.n_heads, o.n_kv_heads, o.gqa_group, o.head_dim, o.sliding_window, o.max_positions,
       o.crossover_tokens, o.exceeds_max_positions, x.crossover_b64, f.first_batch_reaching,
       o.weight_bytes // (512 * o.kv_bytes_per_token)::BIGINT + 1 AS requests_512_to_outweigh,
       o.crossover_tokens / m.llama2_tokens AS vs_llama2_7b,
       o.weight_bytes / o.kv_bytes_per_token AS unwindowed_tokens
FROM one o
LEFT JOIN b64 x USING (run_id, model, source)
LEFT JOIN first_reached f USING (run_id, model, source)
LEFT JOIN mha m USING (run_id)
ORDER BY o.run_id, o.source DESC, o.parameters NULLS FIRST, o.model;
