-- The audit's call labels (store/labels.sql) into the DB: each distinct (file, format, provider, models,
-- system-token source, price source and date) once; every call's row points at one by label_id.
INSERT INTO token_call_labels BY NAME
SELECT $audit_id AS audit_id, $run_id AS run_id, label_id, {label_columns}
FROM _call_labels ORDER BY label_id;
