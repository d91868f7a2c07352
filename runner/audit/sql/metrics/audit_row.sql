-- The audit's one-line record (metrics/audit_summary.sql, cost/audit_cost.sql), for the command's output.
SELECT * FROM audits WHERE audit_id = $audit_id;
