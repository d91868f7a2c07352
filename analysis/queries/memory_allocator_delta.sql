-- Iteration 1: what the allocator delta says vs what the cache really holds.
SELECT k.run_id, r.model, r.dtype, k.seq_len, k.batch_size, k.delta_bytes, k.bytes_per_token,
       k.cache_only_delta_bytes, k.cache_only_bytes_per_token, k.logits_bytes, k.peak_delta_bytes,
       k.formula_bytes_per_token,
       k.bytes_per_token / k.formula_bytes_per_token AS overcount_ratio,
       k.cache_only_delta_bytes = k.expected_kv_bytes AS cache_only_match
FROM allocator_memory k JOIN runs r USING (run_id)
ORDER BY k.run_id, k.batch_size, k.seq_len;
