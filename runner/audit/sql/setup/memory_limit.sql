-- --memory-limit (the command's default, or the caller's): DuckDB spills to temp_directory beyond it.
SET memory_limit = $memory_limit;
