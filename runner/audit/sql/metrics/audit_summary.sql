-- The audit's one-line record: fleet-wide PCER and SPOR (token-weighted over calls), the leakage index
-- (idle share of all KV byte-seconds held), the guardrails with the per-session distribution beside their counts
-- (p50, p90, max: quantile_disc, so each is one session's own figure) and what the figures were priced with.
-- Each column's p50 and p90 come from one quantile_disc of a list: its state holds every session's value outside
-- DuckDB's memory limit (RSS beyond --memory-limit), so two would hold them twice (86 MiB more at 10M values).
INSERT INTO audits BY NAME
WITH c AS (  -- the calls' totals (metrics/call_stats.sql), summed over the shares they were counted in
  SELECT sum(n_calls) AS n_calls, sum(n_sessions) AS n_sessions, sum(input_tokens) AS input_tokens,
         sum(cached_input_tokens) AS cached_input_tokens, sum(output_tokens) AS output_tokens,
         sum(system_tokens) AS system_tokens, sum(spor_input_tokens) AS spor_input_tokens,
         sum(untimed_calls) AS untimed_calls
  FROM _call_stats
),
s AS (
  SELECT sum(kv_byte_seconds) AS kv_bs, sum(idle_kv_byte_seconds) AS idle_bs,
         count(*) FILTER (WHERE spor_warning) AS n_spor, count(*) FILTER (WHERE kv_warning) AS n_kv,
         quantile_disc(kv_cache_bytes, [0.5, 0.9]) AS kv_q, max(kv_cache_bytes) AS kv_max,
         quantile_disc(spor, [0.5, 0.9]) AS spor_q, max(spor) AS spor_top
  FROM token_audit WHERE audit_id = $audit_id
),
w AS (
  SELECT t0, t1, n FROM _seg_window
),
r AS (
  SELECT sum(n_rejects) AS n_rejects FROM _staged_stats
),
k AS (  -- blank lines (and non-call records, and calls outside --since/--until): neither calls nor rejects
  SELECT sum(n_skipped) AS n_skipped FROM _staged_stats
),
m AS (
  SELECT any_value(memory_bytes) AS memory_bytes, any_value(memory_source) AS memory_source
  FROM token_ttl_sweep WHERE audit_id = $audit_id
)
SELECT $audit_id AS audit_id, $run_id AS run_id, $created_at AS created_at, $sources AS sources,
       $format AS format, $model AS model, $kv_bytes_per_token AS kv_bytes_per_token,
       $kv_bytes_source AS kv_bytes_source, $kv_bytes_detail AS kv_bytes_detail,
       c.n_calls, c.n_sessions, r.n_rejects, k.n_skipped AS n_skipped_lines, c.input_tokens, c.cached_input_tokens, c.output_tokens,
       c.system_tokens,
       c.cached_input_tokens / nullif(c.input_tokens, 0) AS overall_pcer,
       c.system_tokens / nullif(c.spor_input_tokens, 0) AS overall_spor,
       c.spor_input_tokens / nullif(c.input_tokens, 0) AS spor_coverage,
       CASE WHEN c.spor_input_tokens IS NULL THEN $spor_reason
            WHEN c.spor_input_tokens < c.input_tokens
              THEN format('covers the {:.1f}% of input tokens whose calls had a system-token count',
                          100 * c.spor_input_tokens / c.input_tokens) END AS spor_reason,
       CASE WHEN s.kv_bs > 0 THEN s.idle_bs / s.kv_bs END AS leakage_index,
       CASE WHEN w.n = 0 THEN 'no timestamps in the log: KV byte-seconds need times'
            WHEN NOT (s.kv_bs > 0) THEN 'every call is at the same instant: no time span to hold KV over'
            WHEN c.untimed_calls > 0 THEN format('{} calls without a time are left out', c.untimed_calls) END
         AS leakage_reason,
       $idle_timeout AS idle_timeout_s, s.kv_bs AS kv_byte_seconds, s.idle_bs AS idle_kv_byte_seconds,
       make_timestamp(CAST(w.t0 * 1e6 AS BIGINT)) AS window_start,
       make_timestamp(CAST(w.t1 * 1e6 AS BIGINT)) AS window_end,
       coalesce(m.memory_bytes, $memory_bytes::BIGINT) AS memory_bytes,
       coalesce(m.memory_source, $memory_source) AS memory_source,
       $tokenizer_name AS tokenizer, $spor_max AS spor_max, $kv_max_bytes AS kv_max_bytes,
       s.n_spor AS n_spor_warnings, s.n_kv AS n_kv_warnings, $kv_max_basis AS kv_max_basis,
       s.kv_q[1] AS session_kv_p50_bytes, s.kv_q[2] AS session_kv_p90_bytes, s.kv_max AS session_kv_max_bytes,
       s.spor_q[1] AS session_spor_p50, s.spor_q[2] AS session_spor_p90, s.spor_top AS session_spor_max,
       $content_calls AS content_calls, $bloat_reason AS bloat_reason, $duration_s AS duration_s,
       $session_keys AS session_keys, $time_keys AS time_keys
FROM c, s, w, r, k, m;
