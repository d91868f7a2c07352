-- Standalone audits are audit-N: how many there are, and whether a given id is taken.
SELECT count(*) FILTER (WHERE audit_id LIKE 'audit-%') AS n,
       count(*) FILTER (WHERE audit_id = $candidate) AS taken
FROM audits;
