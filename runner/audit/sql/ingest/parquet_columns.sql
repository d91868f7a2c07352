-- The column names of a Parquet sessions file.
SELECT name FROM parquet_schema($path);
