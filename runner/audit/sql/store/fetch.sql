-- One audit table's rows of this audit (the demo audit hands them to the run's store), in a fixed order: some are
-- written in no particular one (token_audit comes straight from a parallel aggregate).
SELECT * FROM {table} WHERE audit_id = $audit_id ORDER BY ALL;
