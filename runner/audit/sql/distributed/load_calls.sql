-- A reduce partition's calls, from the maps' Parquet files, into _staged in file order (map_idx, map_rid:
-- the order one process would have read them in), as engine.read_logs leaves it.
INSERT INTO _staged BY NAME
SELECT * EXCLUDE (map_idx, map_rid) FROM read_parquet($files, hive_partitioning = false)
ORDER BY map_idx, map_rid;
