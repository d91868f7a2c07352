-- Every session of one audit, the most KV first, with its ratios and guardrail flags (the page lists the top
-- ones and links all of them as CSV).
SELECT session_id, n_calls, input_tokens, cached_input_tokens, system_tokens, output_tokens, pcer, spor,
       spor_reason, context_tokens, kv_cache_bytes, kv_cache_bytes / 1e6 AS kv_cache_mb,
       idle_kv_byte_seconds / nullif(kv_byte_seconds, 0) AS idle_share, first_seen, last_activity,
       disconnected_at, spor_warning, kv_warning, cost_usd, unpriced_calls
FROM token_audit
WHERE audit_id = $audit_id
ORDER BY kv_cache_bytes DESC, session_id;
