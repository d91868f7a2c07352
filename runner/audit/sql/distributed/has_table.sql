-- Whether the connection has this table (a reduce whose calls logged no content makes no _repeat_parts).
SELECT count(*) > 0 FROM duckdb_tables() WHERE table_name = $table;
