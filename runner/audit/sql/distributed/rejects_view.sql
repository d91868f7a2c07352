-- The audit's rejects, straight from the maps' Parquet files (store/rejects.sql writes them): a view, as
-- setup/calls_and_rejects.sql makes it in one process. A view keeps no parameters, so the files are a
-- {path:...} list (sqlfiles.py).
CREATE OR REPLACE TEMP VIEW _rejects AS SELECT source, line, reason FROM read_parquet({path:files});
