-- KV held over time in one audit (no eviction), active vs idle past the idle timeout.
SELECT sample, t, offset_s, offset_s / 60 AS offset_min, held_bytes, idle_bytes, held_bytes - idle_bytes AS active_bytes,
       held_bytes / 1e6 AS held_mb, idle_bytes / 1e6 AS idle_mb, sessions_held, sessions_idle
FROM token_leakage
WHERE audit_id = $audit_id
ORDER BY sample;
