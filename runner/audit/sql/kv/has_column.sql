-- Whether the DB has this table (and, if $column is not NULL, this column of it): an old or foreign DB may not.
-- duckdb_columns(), not information_schema.columns (a view over it): the same rows at a third of the cost.
SELECT count(*) > 0 FROM duckdb_columns()
WHERE table_name = $table AND ($column IS NULL OR column_name = $column);
