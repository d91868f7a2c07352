-- The tasks' partial tables, unioned: one scratch table from every task's Parquet file of it.
CREATE OR REPLACE TEMP TABLE {table} AS SELECT * FROM read_parquet($files);
