-- The distinct labels of this share of the calls (all of them in one process; one partition of sessions in
-- runner/audit/distributed.py); store/labels.sql numbers those of every share. DISTINCT first, then each
-- label's hash (the one store/calls_labelled.sql gives its calls): hashing every call's eight strings only
-- to group them again cost more than the grouping.
CREATE OR REPLACE TEMP TABLE _label_parts AS
SELECT hash({label_columns}) AS label_hash, {label_columns}
FROM (SELECT DISTINCT {label_columns} FROM _calls_priced);
