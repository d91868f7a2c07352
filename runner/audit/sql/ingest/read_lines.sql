-- The lines of one text file, in file order, blank ones included (so numbers match an editor's):
-- line = rowid + 1 (kv_read_lines in setup/macros.sql reads them). Materialised (spilling to disk beyond
-- memory_limit) rather than numbered with row_number() OVER (), which would force the whole parse onto one
-- thread; a CREATE TABLE AS keeps insertion order (preserve_insertion_order), so rowid is the line's position.
-- A file mixing \n and \r\n endings makes the reader fail; ingest.py then reads a normalised copy.
CREATE OR REPLACE TEMP TABLE _lines AS
SELECT raw
FROM kv_read_lines($path, $delim, $max_line_size, $compression);
