-- The statements that drop every scratch object of the audit: all of the connection's temporary catalog
-- (pipeline.SCRATCH), found here rather than listed by hand, so a new scratch table cannot be forgotten.
-- Views first (they read the tables), then tables, then macros.
SELECT 'DROP VIEW IF EXISTS temp.main."' || replace(view_name, '"', '""') || '"'
FROM duckdb_views() WHERE database_name = 'temp' AND NOT internal
UNION ALL
SELECT 'DROP TABLE IF EXISTS temp.main."' || replace(table_name, '"', '""') || '"'
FROM duckdb_tables() WHERE database_name = 'temp'
UNION ALL
SELECT DISTINCT 'DROP ' || CASE WHEN function_type = 'table_macro' THEN 'MACRO TABLE' ELSE 'MACRO' END
       || ' IF EXISTS temp.main."' || replace(function_name, '"', '""') || '"'
FROM duckdb_functions() WHERE database_name = 'temp' AND function_type IN ('macro', 'table_macro');
