-- The TTL eviction sweep of one audit, "never" (ttl_s NULL) last.
SELECT CASE WHEN ttl_s IS NULL THEN 'never' ELSE format('{} s', ttl_s::BIGINT) END AS ttl, ttl_s,
       held_byte_seconds, freed_byte_seconds, freed_share, mean_held_bytes, peak_held_bytes, freed_bytes_at_peak,
       mean_held_bytes / 1e6 AS mean_held_mb, peak_held_bytes / 1e6 AS peak_held_mb, freed_bytes_at_peak / 1e6 AS freed_mb_at_peak,
       recompute_tokens, evicted_sessions, capacity_multiplier, memory_bytes, memory_source, active_sessions_fit,
       extra_sessions, freed_gpu_hours, freed_cost_usd
FROM token_ttl_sweep
WHERE audit_id = $audit_id
ORDER BY ttl_s NULLS LAST;
