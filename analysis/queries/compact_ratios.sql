-- Per workload: batched vs naive and batched vs the copy roof (the benchmark's ratios, from the stored run).
SELECT b.run_id, r.device_name, b.kv_bytes, b.bytes_moved, b.n_requests, b.seq_len,
       n.gbs AS naive_gbs, b.gbs AS batched_gbs, b.gbs / n.gbs AS batched_over_naive,
       b.pct_of_roof AS batched_pct_of_roof, n.pct_of_roof AS naive_pct_of_roof,
       b.pct_of_peak AS batched_pct_of_peak, b.correct AND n.correct AS correct,
       b.kv_bytes >= 64 * 1024 * 1024 AS target_size, b.spread_wide OR n.spread_wide AS spread_wide
FROM kv_compact_v2 b
JOIN kv_compact_v2 n ON n.run_id = b.run_id AND n.bytes_moved = b.bytes_moved AND n.method = 'naive'
JOIN runs r ON r.run_id = b.run_id
WHERE b.method = 'batched'
ORDER BY b.run_id, b.bytes_moved;
