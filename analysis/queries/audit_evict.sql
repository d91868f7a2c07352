-- The eviction half of the prefix-reuse experiment: KV held by live and disconnected sessions, before
-- and after the disconnected ones are dropped.
SELECT e.run_id, r.model, r.dtype, r.device_name, e.phase, e.sessions_held, e.disconnected_held, e.kv_bytes_held,
       e.kv_bytes_expected, e.allocated_bytes, e.freed_bytes, e.allocator_freed_bytes, e.free_bytes, e.free_source,
       e.mean_session_bytes, e.sessions_fit, e.capacity_if_full
FROM prefix_reuse_evict e JOIN runs r USING (run_id)
ORDER BY e.run_id DESC, e.phase = 'after_evict';
