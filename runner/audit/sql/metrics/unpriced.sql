-- An audit with no KV pricing (kv_pricing.UNPRICED): its figures were computed at one "byte" per token, so every
-- KV byte figure (and what is priced from one: the KV guardrail, sessions that fit, idle and freed GPU-hours and
-- dollars) is a token count and is dropped here. Shares of token-seconds stay: the leakage index, the TTL sweep's
-- freed share and capacity multiplier, its recomputed tokens and evicted sessions.
UPDATE token_audit SET kv_cache_bytes = NULL, kv_byte_seconds = NULL, idle_kv_byte_seconds = NULL, kv_warning = NULL
WHERE audit_id = $audit_id;

UPDATE token_leakage SET held_bytes = NULL, idle_bytes = NULL WHERE audit_id = $audit_id;

UPDATE token_ttl_sweep SET held_byte_seconds = NULL, freed_byte_seconds = NULL, mean_held_bytes = NULL,
  peak_held_bytes = NULL, freed_bytes_at_peak = NULL, active_sessions_fit = NULL, extra_sessions = NULL,
  freed_gpu_hours = NULL, freed_cost_usd = NULL
WHERE audit_id = $audit_id;

UPDATE audits SET kv_byte_seconds = NULL, idle_kv_byte_seconds = NULL, n_kv_warnings = NULL,
  session_kv_p50_bytes = NULL, session_kv_p90_bytes = NULL, session_kv_max_bytes = NULL,
  idle_gpu_hours = NULL, idle_cost_usd = NULL,
  gpu_cost_reason = 'KV not priced (no --model or --kv-bytes-per-token): no idle KV memory to turn into GPU-hours',
  leakage_reason = concat_ws('; ', leakage_reason,
                             CASE WHEN leakage_index IS NOT NULL THEN 'a share of token-seconds: KV not priced' END)
WHERE audit_id = $audit_id;
