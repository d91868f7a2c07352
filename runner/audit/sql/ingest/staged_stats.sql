-- What the reading of the logs gave (_staged, after --since/--until): one scan. One row per share of the
-- files (all of them in one process; each map task's in runner/audit/distributed.py); the audit's totals
-- are the sums. content_calls: valid calls that logged messages (prompt_bloat.py reads the same rows).
CREATE OR REPLACE TEMP TABLE _staged_stats AS
SELECT count(*) FILTER (WHERE reason IS NULL AND NOT blank) AS n_calls,
       count(*) FILTER (WHERE reason IS NOT NULL) AS n_rejects,
       count(*) FILTER (WHERE blank) AS n_skipped,
       count(*) FILTER (WHERE reason IS NULL AND NOT blank AND content IS NOT NULL) AS content_calls
FROM _staged;

-- What the reading gave, for engine.read_logs.
SELECT * FROM _staged_stats;
