-- The audits a site shows (analysis/runs.py): those of the shown runs (_shown_runs) and the newest
-- $max_audits standalone ones (no run).
SELECT audit_id FROM audits WHERE run_id IN (SELECT run_id FROM _shown_runs)
UNION
(SELECT audit_id FROM audits WHERE run_id IS NULL ORDER BY created_at DESC NULLS LAST, audit_id DESC LIMIT $max_audits)
