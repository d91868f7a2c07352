-- A whole file as one record (a pretty-printed JSON document), reported as line 1.
CREATE OR REPLACE TEMP TABLE _lines AS SELECT content AS raw FROM read_text($path);
