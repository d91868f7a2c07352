-- The connection's settings for an audit: naive timestamps are UTC (offsets in logs are converted), and
-- DuckDB spills into the audit's scratch folder when over memory_limit.
SET TimeZone = 'UTC';
SET temp_directory = $tmpdir;
