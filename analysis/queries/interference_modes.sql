-- Every interference measurement: compaction alone, decode alone, both at once, with spreads and bounds.
SELECT i.run_id, r.model, r.dtype, r.device_kind, r.device_name, i.mode, i.concurrency, i.time_ms, i.p25_ms,
       i.p75_ms, i.n, i.spread_wide, i.bytes_moved, i.gbs, i.pct_of_roof, i.roof_gbs, i.peak_gbs, i.bound_ms,
       i.bound_violated, i.bound_note, i.compact_bytes, i.decode_bytes, i.decode_steps, i.decode_batch,
       i.prefix_len, i.n_requests, i.seq_len, i.correct, i.decode_mode, i.host_ms, i.balance_ratio, i.balanced,
       i.decode_in_both_ms, i.compact_in_both_ms, i.decode_inflation, i.compact_bw_lost, i.over_roof,
       CASE i.mode WHEN 'compact' THEN 1 WHEN 'decode' THEN 2 ELSE 3 END AS mode_order
FROM interference i JOIN runs r USING (run_id)
ORDER BY i.run_id, mode_order;
