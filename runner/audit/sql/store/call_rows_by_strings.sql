-- Every call into token_call_rows, finding its label by the strings themselves (two labels share a hash).
SET preserve_insertion_order = false;
INSERT INTO token_call_rows BY NAME
SELECT $audit_id AS audit_id, $run_id AS run_id, l.label_id, {row_columns}
FROM _calls_labelled c JOIN _call_labels l ON {label_match};
RESET preserve_insertion_order;
