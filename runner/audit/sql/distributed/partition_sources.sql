-- Which logs each partition's calls came from (a failed reduce names them).
SELECT kv_partition(session_id, $partitions) AS part, list(DISTINCT source) AS sources
FROM _staged WHERE reason IS NULL AND NOT blank
GROUP BY ALL;
