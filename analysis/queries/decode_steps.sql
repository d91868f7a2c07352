-- One decode step per prefix length and batch size, against the bandwidth floor (bytes / copy roof).
SELECT d.run_id, r.model, r.dtype, r.device_name, d.prefix_len, d.batch_size, d.step_ms, d.p25_ms, d.p75_ms,
       d.n, d.spread_wide, d.kv_growth_bytes, d.expected_growth_bytes, d.growth_match,
       d.kv_growth_bytes / d.batch_size AS growth_bytes_per_seq, d.bytes_read, d.weight_bytes, d.kv_bytes,
       d.achieved_gbs, d.pct_of_peak, d.pct_of_roof, d.roof_gbs, d.peak_gbs, d.weights_floor_ms,
       d.bandwidth_floor_ms, d.step_ms / d.bandwidth_floor_ms AS times_floor, d.restore_method
FROM kv_decode_cost_v2 d JOIN runs r USING (run_id)
ORDER BY d.run_id, d.batch_size, d.prefix_len;
