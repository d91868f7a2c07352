-- The runs a site shows in full (analysis/runs.py): the newest $max_runs, the newest run of each of the
-- $max_configs configurations most recently run (device, model, dtype, as runs.py's config_key groups them),
-- so a page's "newest run of each configuration" is always one of them, the runs of the newest $max_audits
-- audits made inside a run (so the audit pages show the newest audits), and the runs in $extra.
WITH newest AS (SELECT run_id FROM runs ORDER BY run_id DESC LIMIT $max_runs),
latest AS (
  SELECT max(run_id) AS run_id FROM runs
  GROUP BY coalesce(device_name, ''), coalesce(model, ''), coalesce(dtype, '')
  ORDER BY run_id DESC LIMIT $max_configs
),
audited AS (
  SELECT run_id FROM audits WHERE run_id IS NOT NULL
  ORDER BY created_at DESC NULLS LAST, audit_id DESC LIMIT $max_audits
)
SELECT run_id FROM newest
UNION SELECT run_id FROM latest
UNION SELECT run_id FROM runs WHERE run_id IN (SELECT run_id FROM audited)
UNION SELECT run_id FROM runs WHERE list_contains($extra::INTEGER[], run_id)
