-- Whether the DB has this table (and, if $column is not NULL, this column of it): an old or foreign DB may not.
SELECT count(*) > 0 FROM information_schema.columns
WHERE table_name = $table AND ($column IS NULL OR column_name = $column);
