-- Every admitted request: running KV bytes, allocator counters and the ceiling of its sequence length.
SELECT p.run_id, r.model, r.dtype, r.device_kind, r.device_name, p.seq_len, p.n_requests, p.kv_bytes,
       p.allocated_bytes, p.reserved_bytes, p.allocated_delta_bytes, p.memory_source, c.ceiling_bytes,
       c.weight_bytes
FROM pressure p
JOIN runs r USING (run_id)
LEFT JOIN concurrent_capacity c ON c.run_id = p.run_id AND c.seq_len = p.seq_len
ORDER BY p.run_id, p.seq_len, p.n_requests;
