-- Whether this DuckDB has try() (1.3 and later): one JSON parse per line instead of two (setup/parse_*.sql).
SELECT try(1);
