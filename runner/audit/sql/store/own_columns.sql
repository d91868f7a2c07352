-- A DB table's own columns, in the schema's order (runner/core/schema/*.sql): all but the audit's ids and
-- the label number, which the store steps give every row. The column lists of store/*.sql come from here,
-- so the schema is their one definition. (duckdb_columns(): what information_schema.columns shows, cheaper.)
SELECT column_name FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $table
  AND column_name NOT IN ('audit_id', 'run_id', 'label_id')
ORDER BY column_index;
