-- The per-session figures (token_audit, token_bloat) every reduce computed, into the DB's table, once.
INSERT INTO {table} BY NAME SELECT * FROM read_parquet($files);
