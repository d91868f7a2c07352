-- Cache sizes measured from real cache tensors (cache_tensors), with what the Models page needs to set the
-- formula beside each: the run's model, dtype and the transformers release that measured it.
SELECT r.run_id, r.model, r.dtype, r.transformers_version, r.weights_random, m.seq_len, m.batch_size, m.kv_bytes
FROM cache_tensors m JOIN runs r USING (run_id)
WHERE m.kv_bytes IS NOT NULL AND m.seq_len IS NOT NULL AND m.batch_size IS NOT NULL
ORDER BY r.model, r.run_id DESC, m.seq_len, m.batch_size;
