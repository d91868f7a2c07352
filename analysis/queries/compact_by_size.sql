-- Compaction bandwidth per workload and method, against the peak and the copy roof of the same size
-- (roof_basis says so; rows older than schema 3 were set against one roof at one size).
-- GB/s spread comes from the time quartiles: the p75 time gives the low bandwidth, the p25 time the high.
-- over_roof: above 105% of the same-size roof, a measurement error; dram_sized: moves >= 4x the LLC/L2.
SELECT c.run_id, r.model, r.dtype, r.device_kind, r.device_name, c.method, c.n_requests, c.seq_len, c.n_slots, c.kv_bytes,
       c.bytes_moved, c.launches, c.time_ms, c.p25_ms, c.p75_ms, c.n, c.spread_wide, c.gbs,
       c.bytes_moved / (c.p75_ms * 1e-3) / 1e9 AS gbs_low, c.bytes_moved / (c.p25_ms * 1e-3) / 1e9 AS gbs_high,
       c.pct_of_peak, c.pct_of_roof, c.roof_gbs, c.peak_gbs, c.correct, c.cache_flushed, c.host_ms,
       c.dispatch_hidden, coalesce(c.over_roof, c.pct_of_roof > 1.05) AS over_roof, c.dram_sized, c.llc_bytes,
       c.element_bytes, c.roof_basis, c.skipped_methods,
       CASE c.method WHEN 'naive' THEN 1 WHEN 'triton_layers' THEN 2 WHEN 'batched' THEN 3 ELSE 4 END AS method_order
FROM compaction c JOIN runs r USING (run_id)
ORDER BY c.run_id, c.method, c.bytes_moved;
