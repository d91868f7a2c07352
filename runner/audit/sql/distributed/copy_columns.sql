-- The select list that writes one of the audit's tables to Parquet (distributed/write_table.sql): its columns in
-- order, quoted, with HUGEINT sums as BIGINT (a share's are far inside BIGINT), which Parquet stores exactly.
-- NULL: no such table. The scratch tables never shadow a DB table (tests/test_audit_pipeline.py), so the name
-- finds one.
SELECT string_agg(CASE WHEN data_type = 'HUGEINT' THEN 'CAST(' || q || ' AS BIGINT) AS ' || q ELSE q END, ', '
                  ORDER BY ordinal_position)
FROM (SELECT '"' || replace(column_name, '"', '""') || '"' AS q, data_type, ordinal_position
      FROM information_schema.columns WHERE table_name = $table);
