-- Measured free memory for KV (kv_capacity_v3), the model's own runs first, then the newest.
SELECT c.run_id, r.model, coalesce(r.gpu_name, r.device_name), max(c.free_bytes)
FROM kv_capacity_v3 c JOIN runs r USING (run_id)
WHERE c.free_bytes IS NOT NULL
GROUP BY c.run_id, r.model, r.gpu_name, r.device_name
ORDER BY r.model = $model DESC, c.run_id DESC LIMIT 1;
