-- kv_parse(raw, structure): the line as a struct of JSON-typed leaves, NULL when it is not valid JSON.
-- This DuckDB has try(): one parse per line.
CREATE OR REPLACE TEMP MACRO kv_parse(raw, structure) AS try(json_transform(raw, structure));
