-- The audit's call totals for the summary (metrics/audit_summary.sql sums the rows of this table): one row per share of
-- the calls (all of them in one process; one partition of sessions in runner/audit/distributed.py, whose
-- sessions no other partition holds, so distinct sessions add up too). n_unnamed: calls that named no
-- session (ingest made each its own), for the command's output.
-- The sessions are token_audit's rows of this audit on this connection (metrics/per_session.sql grouped the calls
-- by session already), not a second grouping of the calls; never count(DISTINCT ...), whose one hash table does
-- not spill (at ten million one-call sessions it failed the audit at the default --memory-limit).
CREATE OR REPLACE TEMP TABLE _call_stats AS
SELECT count(*) AS n_calls,
       (SELECT count(*) FROM token_audit WHERE audit_id = $audit_id AND session_id IS NOT NULL) AS n_sessions,
       sum(input_tokens) AS input_tokens, sum(cached_input_tokens) AS cached_input_tokens,
       sum(output_tokens) AS output_tokens,
       sum(system_tokens) AS system_tokens,
       sum(input_tokens) FILTER (WHERE system_tokens IS NOT NULL) AS spor_input_tokens,
       count(*) FILTER (WHERE coalesce(start_time, end_time) IS NULL) AS untimed_calls,
       count(*) FILTER (WHERE kv_unnamed(session_id)) AS n_unnamed
FROM _calls;
