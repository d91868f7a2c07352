-- Per-layer K and V bytes at the longest sequence measured with batch 1, per run.
WITH pick AS (
  SELECT run_id, max(seq_len) AS seq_len FROM kv_per_layer WHERE batch_size = 1 GROUP BY run_id
)
SELECT l.run_id, l.layer, l.seq_len, l.batch_size, l.k_bytes, l.v_bytes, l.cached_tokens, l.k_shape
FROM kv_per_layer l JOIN pick p USING (run_id, seq_len)
WHERE l.batch_size = 1
ORDER BY l.run_id, l.layer;
