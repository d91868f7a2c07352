-- Every token audit in the DB: standalone ones (`kvreport audit`, run_id NULL) first, newest first,
-- then the demo audit each `kvreport run` makes.
SELECT audit_id, run_id, created_at, sources, format, model, kv_bytes_per_token, kv_bytes_source, kv_bytes_detail,
       n_calls, n_sessions, n_rejects, input_tokens, cached_input_tokens, output_tokens, system_tokens,
       overall_pcer, overall_spor, spor_coverage, spor_reason, leakage_index, leakage_reason, idle_timeout_s,
       kv_byte_seconds, idle_kv_byte_seconds, window_start, window_end, memory_bytes, memory_source, tokenizer,
       spor_max, kv_max_bytes, kv_max_bytes / 1e6 AS kv_max_mb, n_spor_warnings, n_kv_warnings, content_calls,
       kv_max_basis, session_kv_p50_bytes / 1e6 AS session_kv_p50_mb, session_kv_p90_bytes / 1e6 AS session_kv_p90_mb,
       session_kv_max_bytes / 1e6 AS session_kv_max_mb, session_spor_p50, session_spor_p90, session_spor_max,
       bloat_reason, cost_usd, priced_calls, unpriced_calls, price_source, price_snapshot_date
FROM audits
ORDER BY run_id IS NOT NULL, run_id DESC, created_at DESC, audit_id;
