-- Every table in the DB file (temporary stand-ins for missing tables excluded) with its columns.
SELECT t.table_name, t.column_count,
       string_agg(c.column_name || ' ' || c.data_type, ', ' ORDER BY c.column_index) AS columns
FROM duckdb_tables() t
JOIN duckdb_columns() c ON c.database_oid = t.database_oid AND c.table_oid = t.table_oid
WHERE NOT t.temporary AND t.schema_name = 'main' AND t.table_name <> 'kvreport_meta'
GROUP BY t.table_name, t.column_count
ORDER BY t.table_name;
