-- Does DuckDB parse this --session-key / --time-key path? (It raises, naming where the path breaks, if not.)
SELECT json_extract('{}', $path);
