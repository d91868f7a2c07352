-- The audit's calls with their costs, straight from the reduces' Parquet files (store/calls_labelled.sql and
-- the store steps read them): a view, so ten million calls are not copied once more. A view keeps no
-- parameters, so the files are a {path:...} list (sqlfiles.py).
CREATE OR REPLACE TEMP VIEW _calls_priced AS SELECT * FROM read_parquet({path:files});
