-- Claims ledger, fragmentation: "after evicting 25MB of KV caches, the allocator still reserves 131.7MB".
-- Tested with the default allocator: does memory freed by eviction stay reserved (not returned)?
WITH e AS (
  SELECT f.run_id, r.device_name, f.evicted_bytes,
         f.reserved_bytes - f.allocated_bytes AS retained, f.reserved_bytes,
         (SELECT x.reserved_bytes - x.allocated_bytes FROM fragmentation x
          WHERE x.run_id = f.run_id AND x.allocator = 'default' AND x.phase = 'after_empty_cache') AS retained_ec,
         (SELECT x.reserved_bytes - x.allocated_bytes FROM fragmentation x
          WHERE x.run_id = f.run_id AND x.allocator = 'expandable_segments' AND x.phase = 'after_evict') AS retained_exp
  FROM fragmentation f JOIN runs r USING (run_id)
  WHERE f.allocator = 'default' AND f.phase = 'after_evict'
),
skips AS (
  SELECT string_agg(DISTINCT reason, '; ' ORDER BY reason) AS reasons FROM experiments
  WHERE experiment = 'fragmentation' AND status <> 'ok'
)
SELECT 'frag_retained_after_evict' AS claim_id, 'profiler seed' AS source,
       'After evicting 25MB of KV caches, allocator still reserves 131.7MB' AS claim,
       '131.7 MB reserved after evicting 25 MB' AS seed_value, 'RTX 2070 (GPT-2, float16)' AS seed_hardware,
       'measurement' AS basis, true AS claim_on_gpu, run_id::INTEGER AS run_id,
       printf('evicted %.1f MB: %.1f MB reserved, %.1f MB of it unallocated (%.1f MB after empty_cache; %s)',
              evicted_bytes / 1e6, reserved_bytes / 1e6, retained / 1e6, retained_ec / 1e6,
              CASE WHEN retained_exp IS NULL THEN 'expandable segments not measured'
                   ELSE printf('expandable segments: %.1f MB', retained_exp / 1e6) END) AS measured_value,
       CASE WHEN retained >= 0.5 * evicted_bytes THEN $confirmed ELSE $refuted END AS verdict,
       CASE WHEN retained >= 0.5 * evicted_bytes
            THEN 'the caching allocator keeps evicted requests'' memory reserved for reuse; the exact MB depend on the workload'
            ELSE 'most of the evicted memory left the reserved pool on this device and torch' END AS reasoning
FROM e
UNION ALL
SELECT 'frag_retained_after_evict', 'profiler seed', 'After evicting 25MB of KV caches, allocator still reserves 131.7MB',
       '131.7 MB reserved after evicting 25 MB', 'RTX 2070 (GPT-2, float16)', 'measurement', true, NULL::INTEGER, NULL,
       $not_measured,
       coalesce('skipped: ' || (SELECT reasons FROM skips), 'no run in this DB has fragmentation measurements')
WHERE NOT EXISTS (SELECT 1 FROM e)
ORDER BY run_id;
