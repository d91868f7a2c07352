-- Compaction bandwidth per workload and method, against the peak and the copy roof.
-- GB/s spread comes from the time quartiles: the p75 time gives the low bandwidth, the p25 time the high.
SELECT c.run_id, r.model, r.dtype, r.device_name, c.method, c.n_requests, c.seq_len, c.n_slots, c.kv_bytes,
       c.bytes_moved, c.launches, c.time_ms, c.p25_ms, c.p75_ms, c.n, c.spread_wide, c.gbs,
       c.bytes_moved / (c.p75_ms * 1e-3) / 1e9 AS gbs_low, c.bytes_moved / (c.p25_ms * 1e-3) / 1e9 AS gbs_high,
       c.pct_of_peak, c.pct_of_roof, c.roof_gbs, c.peak_gbs, c.correct, c.cache_flushed
FROM kv_compact_v2 c JOIN runs r USING (run_id)
ORDER BY c.run_id, c.method, c.bytes_moved;
