-- The measured model against its own formula row in the same run (built-in architectures only): the
-- crossover in tokens must agree even though the dtypes may differ, since both sides scale with it.
SELECT m.run_id, m.model, m.dtype AS measured_dtype, f.dtype AS formula_dtype,
       m.kv_bytes_per_token AS measured_bytes_per_token, f.kv_bytes_per_token AS formula_bytes_per_token,
       m.weight_bytes AS measured_weight_bytes, f.weight_bytes AS formula_weight_bytes,
       m.crossover_tokens AS measured_tokens, f.crossover_tokens AS formula_tokens,
       m.crossover_tokens / f.crossover_tokens AS ratio,
       abs(m.crossover_tokens / f.crossover_tokens - 1) < 0.001 AS agree
FROM crossover m
JOIN crossover f ON f.run_id = m.run_id AND f.model = m.model AND f.batch_size = m.batch_size
WHERE m.source = 'measured' AND f.source = 'formula' AND m.batch_size = 1
ORDER BY m.run_id;
