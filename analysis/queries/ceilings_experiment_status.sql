-- Status of one experiment in every run (ok / skipped / failed, with the reason): pages say why data is missing.
SELECT e.run_id, e.experiment, e.status, e.reason, r.device_name, r.model
FROM experiments e JOIN runs r USING (run_id)
WHERE e.experiment = $experiment
ORDER BY e.run_id;
