-- kv_parse(raw, structure): the line as a struct of JSON-typed leaves, NULL when it is not valid JSON.
-- This DuckDB has no try() (before 1.3): validate first, then parse (two parses per line).
CREATE OR REPLACE TEMP MACRO kv_parse(raw, structure) AS
  CASE WHEN json_valid(raw) THEN json_transform(raw, structure) END;
