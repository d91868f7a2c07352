-- Headline: memory the default allocator keeps reserved after evicting requests, per run.
WITH p AS (SELECT * FROM fragmentation)
SELECT e.run_id,
       printf('After evicting %.0f MB of KV cache on %s, the default allocator keeps %.0f MB reserved beyond what is allocated (%.0f MB after empty_cache; expandable segments: %s)',
              e.evicted_bytes / 1e6, r.device_name, (e.reserved_bytes - e.allocated_bytes) / 1e6,
              (x.reserved_bytes - x.allocated_bytes) / 1e6,
              coalesce(printf('%.0f MB', (xe.reserved_bytes - xe.allocated_bytes) / 1e6), 'not measured')) AS finding,
       (e.reserved_bytes - e.allocated_bytes) / 1e6 AS value, 'MB' AS unit, 'fragmentation.html' AS page
FROM p e JOIN runs r USING (run_id)
JOIN p x ON x.run_id = e.run_id AND x.allocator = 'default' AND x.phase = 'after_empty_cache'
LEFT JOIN p xe ON xe.run_id = e.run_id AND xe.allocator = 'expandable_segments' AND xe.phase = 'after_evict'
WHERE e.allocator = 'default' AND e.phase = 'after_evict'
ORDER BY e.run_id;
