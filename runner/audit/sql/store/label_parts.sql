-- The distinct labels of this share of the calls (all of them in one process; one partition of sessions in
-- runner/audit/distributed.py); store/labels.sql numbers those of every share.
CREATE OR REPLACE TEMP TABLE _label_parts AS
SELECT DISTINCT label_hash, {label_columns}
FROM _calls_labelled;
