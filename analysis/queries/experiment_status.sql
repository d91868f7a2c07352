-- What ran, what was skipped (and why), what failed, per run.
SELECT run_id, experiment, status, reason, round(duration_s, 2) AS duration_s
FROM experiments
ORDER BY run_id, started_at, experiment;
