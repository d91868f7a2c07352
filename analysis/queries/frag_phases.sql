-- Allocator counters per phase of the fragmentation scenario; retained = reserved but not allocated.
SELECT f.run_id, r.device_name, r.model, f.allocator, f.phase, f.allocated_bytes, f.reserved_bytes,
       f.reserved_bytes - f.allocated_bytes AS retained_bytes, f.inactive_split_bytes, f.num_alloc_retries,
       f.live_requests, f.n_requests, f.evicted_bytes, f.kv_live_bytes, f.setting_confirmed
FROM fragmentation f JOIN runs r USING (run_id)
ORDER BY f.run_id, f.allocator,
         CASE f.phase WHEN 'admitted' THEN 0 WHEN 'after_evict' THEN 1 ELSE 2 END;
