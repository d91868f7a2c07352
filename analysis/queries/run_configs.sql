-- Every run's configuration, one narrow row per run: what analysis/runs.py's config_key reads. `kvreport
-- findings` needs no more of a run than this, and a DB of a million runs would not fit as runs.sql's rows.
SELECT run_id, device_name, model, dtype FROM runs ORDER BY run_id;
