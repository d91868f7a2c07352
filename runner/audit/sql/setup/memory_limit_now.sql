-- DuckDB's memory limit as it stands (its own text, e.g. '19.2 GiB'): ingest.line_limit sizes the longest line
-- an audit reads from it.
SELECT current_setting('memory_limit');
