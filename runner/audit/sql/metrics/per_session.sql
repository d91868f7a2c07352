-- Per-session figures. PCER = cached / total input and SPOR = system / total input, token-weighted over
-- the session's calls. The KV footprint is the largest context the session ever held (input + output of
-- one call) at its own length (kv_bytes_at: caps and constant states applied): a multi-turn session re-sends
-- its history each call, so summing every call's
-- tokens would count the history once per turn. For the seed's one-record sessions both agree.
INSERT INTO token_audit BY NAME
WITH s AS (
  SELECT session_id, count(*) AS n_calls, sum(input_tokens) AS input_tokens,
         sum(cached_input_tokens) AS cached_input_tokens,
         CASE WHEN count(system_tokens) = count(*) THEN sum(system_tokens) END AS system_tokens,
         count(*) - count(system_tokens) AS n_no_system,
         sum(output_tokens) AS output_tokens, max(input_tokens + output_tokens) AS context_tokens,
         min(coalesce(start_time, end_time)) AS first_seen, max(coalesce(end_time, start_time)) AS last_activity,
         max(disconnected_at) AS disconnected_at,
         sum(input_cost_usd + cache_read_cost_usd + cache_write_cost_usd + output_cost_usd + request_usd) AS cost_usd,
         count(*) FILTER (WHERE input_usd_mtok IS NULL) AS unpriced_calls
  FROM _calls_rated  -- this audit's calls, each with its price (cost/rated_calls.sql)
  GROUP BY session_id
),
b AS (
  SELECT session_id, sum((t_end - t_start) * kv_bytes) AS kv_byte_seconds,
         sum(greatest(0, t_end - greatest(t_idle, t_start)) * kv_bytes) AS idle_kv_byte_seconds
  FROM _seg GROUP BY session_id
),
sb AS (  -- not sorted: every reader of token_audit orders its rows itself (sorting here cost a fifth of this step)
  SELECT s.*, kv_bytes_at(context_tokens, $bytes_per_token, $kv_constant_bytes,
                          $kv_cap_bytes_1, $kv_cap_1, $kv_cap_bytes_2, $kv_cap_2, $kv_cap_bytes_3, $kv_cap_3) AS kv_cache_bytes,
         b.kv_byte_seconds, b.idle_kv_byte_seconds
  FROM s LEFT JOIN b USING (session_id)
)
SELECT $audit_id AS audit_id, $run_id AS run_id, session_id, n_calls, input_tokens, cached_input_tokens,
       system_tokens, output_tokens,
       cached_input_tokens / nullif(input_tokens, 0) AS pcer,
       system_tokens / nullif(input_tokens, 0) AS spor,
       CASE WHEN n_no_system = n_calls THEN $spor_reason
            WHEN system_tokens IS NULL THEN format('no system-token count for {} of {} calls', n_no_system, n_calls)
            WHEN input_tokens = 0 THEN 'no input tokens' END AS spor_reason,
       context_tokens, kv_cache_bytes,
       first_seen, last_activity, disconnected_at, kv_byte_seconds, idle_kv_byte_seconds,
       system_tokens / nullif(input_tokens, 0) > $spor_max AS spor_warning,
       kv_cache_bytes > $kv_max_bytes AS kv_warning,
       CASE WHEN unpriced_calls = 0 THEN cost_usd END AS cost_usd, unpriced_calls  -- partial sums are no cost
FROM sb;
