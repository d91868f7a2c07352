-- One audit table's rows of this audit (the demo audit hands them to the run's store), in the order written.
SELECT * FROM {table} WHERE audit_id = $audit_id;
