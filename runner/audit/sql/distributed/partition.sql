-- Which reduce partition a session's calls go to: the one definition the map's two statements share
-- (distributed/calls_by_partition.sql, distributed/partition_sources.sql). hash() is DuckDB's own, so every
-- worker must run the driver's DuckDB version (distributed.py checks).
CREATE OR REPLACE TEMP MACRO kv_partition(session_id, partitions) AS CAST(hash(session_id) % partitions AS INTEGER);
