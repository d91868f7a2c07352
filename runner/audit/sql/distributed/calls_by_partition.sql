-- A map task's valid calls (every one inside --since/--until: the prompt-bloat analysis reads no others either)
-- to Parquet, one folder per reduce partition (part=N/). Every column of _staged but need_raw, the ingest's own
-- mark, so the reduce (distributed/load_calls.sql) gets back the rows it would have read itself; map_idx and
-- map_rid keep each file's rows in their order (the rid tie-breaks of prompt_bloat).
COPY (SELECT * EXCLUDE (need_raw), $map_idx AS map_idx, rowid AS map_rid,
             kv_partition(session_id, $partitions) AS part
      FROM _staged WHERE reason IS NULL AND NOT blank)
TO {path:calls} (FORMAT PARQUET, PARTITION_BY (part));
