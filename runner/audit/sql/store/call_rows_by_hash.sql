-- Every call into token_call_rows, finding its label by label_hash (no two of the audit's labels share one).
SET preserve_insertion_order = false;
INSERT INTO token_call_rows BY NAME
SELECT $audit_id AS audit_id, $run_id AS run_id, l.label_id, {row_columns}
FROM _calls_labelled c JOIN _call_labels l ON l.label_hash = c.label_hash;
RESET preserve_insertion_order;
