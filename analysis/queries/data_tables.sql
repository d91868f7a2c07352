-- Every table and view in the DB file (temporary stand-ins for missing tables excluded) with its columns.
-- Views count: token_calls is one since schema step 006 (it reads the narrow tables beside it).
WITH t AS (
  SELECT database_oid, table_oid AS oid, table_name, column_count, temporary, schema_name FROM duckdb_tables()
  UNION ALL
  SELECT database_oid, view_oid, view_name, column_count, temporary, schema_name FROM duckdb_views() WHERE NOT internal
)
SELECT t.table_name, t.column_count,
       string_agg(c.column_name || ' ' || c.data_type, ', ' ORDER BY c.column_index) AS columns
FROM t
JOIN duckdb_columns() c ON c.database_oid = t.database_oid AND c.table_oid = t.oid
WHERE NOT t.temporary AND t.schema_name = 'main' AND t.table_name <> 'kvreport_meta'
GROUP BY t.table_name, t.column_count
ORDER BY t.table_name;
