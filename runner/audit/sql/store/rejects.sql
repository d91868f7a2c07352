-- The audit's rejects (setup/calls_and_rejects.sql), each with its file and line, into the DB.
INSERT INTO token_rejects BY NAME
SELECT $audit_id AS audit_id, $run_id AS run_id, source, line, reason FROM _rejects;
