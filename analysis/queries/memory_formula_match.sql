-- Measured cache tensor bytes vs the analytic formula, per run, sequence length and batch.
SELECT m.run_id, r.model, r.dtype, r.device_name, m.seq_len, m.batch_size, m.kv_bytes, m.expected_kv_bytes,
       m.bytes_per_token, m.formula_bytes_per_token, m.cached_tokens,
       m.kv_bytes - m.expected_kv_bytes AS diff_bytes,
       m.match
FROM cache_tensors m JOIN runs r USING (run_id)
ORDER BY m.run_id, m.batch_size, m.seq_len;
