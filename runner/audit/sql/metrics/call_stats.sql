-- The audit's call totals for the summary (metrics/audit_summary.sql sums the rows of this table): one row per share of
-- the calls (all of them in one process; one partition of sessions in runner/audit/distributed.py, whose
-- sessions no other partition holds, so distinct sessions add up too). n_unnamed: calls that named no
-- session (ingest made each its own), for the command's output.
-- The sessions are counted by a GROUP BY, not count(DISTINCT ...): DuckDB's distinct aggregate grows one hash
-- table that does not spill, and at ten million one-call sessions it failed the audit ("failed to allocate data
-- of size 64.0 MiB") at the default --memory-limit, where a grouped aggregate spills.
CREATE OR REPLACE TEMP TABLE _call_stats AS
SELECT count(*) AS n_calls,
       (SELECT count(*) FROM (SELECT session_id FROM _calls WHERE session_id IS NOT NULL GROUP BY session_id))
         AS n_sessions,
       sum(input_tokens) AS input_tokens, sum(cached_input_tokens) AS cached_input_tokens,
       sum(output_tokens) AS output_tokens,
       sum(system_tokens) AS system_tokens,
       sum(input_tokens) FILTER (WHERE system_tokens IS NOT NULL) AS spor_input_tokens,
       count(*) FILTER (WHERE coalesce(start_time, end_time) IS NULL) AS untimed_calls,
       count(*) FILTER (WHERE kv_unnamed(session_id)) AS n_unnamed
FROM _calls;
