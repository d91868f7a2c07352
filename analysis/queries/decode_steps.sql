-- One decode step per mode, prefix length and batch size, against the bandwidth floor (bytes read + written
-- over the read roof of the same size; older rows: bytes read over the copy roof, see roof_basis). The
-- decomposition: weights, KV read, KV written, the eager layout's torch.cat re-copy, GPU-busy time (step_ms)
-- and host time per call (host_ms); overhead_ms = host - GPU-busy (GPU only).
SELECT d.run_id, r.model, r.dtype, r.device_kind, r.device_name, coalesce(d.mode, 'eager') AS mode, d.prefix_len,
       d.batch_size, d.step_ms, d.p25_ms, d.p75_ms,
       d.n, d.spread_wide, d.kv_growth_bytes, d.expected_growth_bytes, d.growth_match,
       d.kv_growth_bytes / d.batch_size AS growth_bytes_per_seq, d.bytes_read, d.weight_bytes, d.kv_bytes,
       d.achieved_gbs, d.pct_of_peak, d.pct_of_roof, d.roof_gbs, d.peak_gbs, d.weights_floor_ms,
       d.bandwidth_floor_ms, d.step_ms / d.bandwidth_floor_ms AS times_floor, d.restore_method, d.host_ms,
       d.host_p25_ms, d.host_p75_ms, d.dispatch_hidden, d.kv_read_bytes, d.kv_write_bytes, d.recopy_bytes,
       d.bytes_moved, d.overhead_ms, coalesce(d.over_roof, d.pct_of_roof > 1.05) AS over_roof, d.roof_basis,
       d.skipped_modes,
       CASE coalesce(d.mode, 'eager') WHEN 'eager' THEN 1 WHEN 'static' THEN 2 ELSE 3 END AS mode_order
FROM decode_cost d JOIN runs r USING (run_id)
ORDER BY d.run_id, d.batch_size, d.prefix_len, mode_order;
