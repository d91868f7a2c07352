-- The what-if of prefix caching (cost/audit_cost.sql says what each figure is), as sums over the sessions the
-- prompt-bloat analysis covers whose calls are all priced. One row per share of the sessions (all of them in
-- one process; one partition in runner/audit/distributed.py); cost/audit_cost.sql sums them.
CREATE OR REPLACE TEMP TABLE _whatif_parts AS
SELECT (SELECT count(*) FROM token_bloat WHERE audit_id = $audit_id) AS n_bloat,
       (SELECT count(*) FROM token_bloat WHERE audit_id = $audit_id AND achievable_pcer IS NOT NULL) AS n_achievable,
       sum(s.n_calls) AS n_calls, sum(s.all_uncached_usd + s.fixed_usd) AS nocache, sum(s.cost_usd) AS actual,
       sum(b.achievable_pcer * s.all_read_usd + (1 - b.achievable_pcer) * s.all_write_usd + s.fixed_usd) AS achievable,
       sum(b.stable_prefix_pcer * s.all_read_usd + (1 - b.stable_prefix_pcer) * s.all_write_usd + s.fixed_usd) AS stable,
       sum(b.achievable_pcer * s.input_tokens) AS achievable_input_tokens,
       sum(b.stable_prefix_pcer * s.input_tokens) AS stable_input_tokens, sum(s.input_tokens) AS input_tokens
FROM (  -- per session: its input all uncached, all read, all written; output and fees as they were
      SELECT session_id, count(*) AS n_calls, sum(input_tokens) AS input_tokens,
             sum(input_cost_usd + cache_read_cost_usd + cache_write_cost_usd + output_cost_usd + request_usd)
               AS cost_usd,
             count(*) FILTER (WHERE input_usd_mtok IS NULL) AS unpriced_calls,
             sum(input_tokens * input_usd_mtok) / 1e6 AS all_uncached_usd,
             sum(input_tokens * cache_read_usd_mtok) / 1e6 AS all_read_usd,
             sum(input_tokens * cache_write_usd_mtok) / 1e6 AS all_write_usd,
             sum(output_tokens * output_usd_mtok / 1e6 + request_usd) AS fixed_usd
      FROM _calls_rated WHERE session_id IN (SELECT session_id FROM token_bloat WHERE audit_id = $audit_id)
      GROUP BY session_id) s
JOIN token_bloat b USING (session_id)
WHERE b.audit_id = $audit_id AND s.unpriced_calls = 0 AND b.achievable_pcer IS NOT NULL;
