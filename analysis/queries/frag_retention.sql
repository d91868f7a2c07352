-- Per run and allocator: what stays reserved after evicting requests, and after empty_cache().
WITH p AS (SELECT * FROM fragmentation)
SELECT a.run_id, r.device_name, a.allocator, e.evicted_bytes, e.live_requests, a.n_requests,
       a.reserved_bytes AS reserved_admitted, e.reserved_bytes AS reserved_after_evict,
       e.allocated_bytes AS allocated_after_evict,
       e.reserved_bytes - e.allocated_bytes AS retained_after_evict,
       (e.reserved_bytes - e.allocated_bytes) / nullif(e.evicted_bytes, 0) AS retained_over_evicted,
       x.reserved_bytes - x.allocated_bytes AS retained_after_empty_cache,
       e.inactive_split_bytes AS inactive_split_after_evict,
       x.inactive_split_bytes AS inactive_split_after_empty_cache,
       x.num_alloc_retries, a.setting_confirmed
FROM p a
JOIN p e ON e.run_id = a.run_id AND e.allocator = a.allocator AND e.phase = 'after_evict'
JOIN p x ON x.run_id = a.run_id AND x.allocator = a.allocator AND x.phase = 'after_empty_cache'
JOIN runs r ON r.run_id = a.run_id
WHERE a.phase = 'admitted'
ORDER BY a.run_id, a.allocator;
