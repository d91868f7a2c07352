-- The newest measurement of a model's KV bytes per token in the DB, 16-bit runs first (what serving uses).
SELECT m.run_id, r.dtype, m.seq_len, m.bytes_per_token
FROM kv_memory_v2 m JOIN runs r USING (run_id)
WHERE r.model = $model AND m.cached_tokens = m.seq_len
ORDER BY r.dtype IN ('float16', 'bfloat16') DESC, m.run_id DESC, m.seq_len DESC, m.batch_size DESC
LIMIT 1;
