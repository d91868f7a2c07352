-- Status of one experiment in every run (ok / skipped / failed, with the reason), so the iteration-3
-- pages say why data is missing instead of showing an empty chart. $experiment: the experiment name.
SELECT e.run_id, e.experiment, e.status, e.reason, r.device_kind, r.device_name, r.model
FROM experiments e JOIN runs r USING (run_id)
WHERE e.experiment = $experiment
ORDER BY e.run_id;
