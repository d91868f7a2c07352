-- The newest measurement of a model's KV bytes per token in the DB, from 16-bit runs only: the audit prices
-- 16-bit caches (what serving uses), and a float32 run's figure is twice that.
SELECT m.run_id, r.dtype, m.seq_len, m.bytes_per_token
FROM cache_tensors m JOIN runs r USING (run_id)
WHERE r.model = $model AND m.cached_tokens = m.seq_len AND r.dtype IN ('float16', 'bfloat16')
ORDER BY m.run_id DESC, m.seq_len DESC, m.batch_size DESC
LIMIT 1;
