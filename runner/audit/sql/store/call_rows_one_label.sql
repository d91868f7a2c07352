-- Every call into token_call_rows when all share label 1 (one big log of one model, the common case): no
-- hash, no join. The calls carry their line, so they are written in any order (preserving it costs a third
-- of the time and memory; every reader sorts).
SET preserve_insertion_order = false;
INSERT INTO token_call_rows BY NAME
SELECT $audit_id AS audit_id, $run_id AS run_id, 1 AS label_id, {row_columns} FROM _calls_priced c;
RESET preserve_insertion_order;
