-- Per workload: every method against naive and against the copy roof of the same size (the benchmark's
-- ratios, from the stored run). triton / triton_layers are NULL where they did not run (the CPU).
-- target_size: the workloads the GPU target speaks for (triton >= 85% of the same-size roof from 256 MiB
-- moved); over_roof: some method above 105% of its roof at this size (a measurement error, not a result).
SELECT b.run_id, r.device_name, b.kv_bytes, b.bytes_moved, b.n_requests, b.seq_len, b.roof_gbs,
       n.gbs AS naive_gbs, b.gbs AS batched_gbs, t.gbs AS triton_gbs, tl.gbs AS triton_layers_gbs,
       b.gbs / n.gbs AS batched_over_naive, t.gbs / n.gbs AS triton_over_naive,
       b.pct_of_roof AS batched_pct_of_roof, n.pct_of_roof AS naive_pct_of_roof,
       t.pct_of_roof AS triton_pct_of_roof, tl.pct_of_roof AS triton_layers_pct_of_roof,
       b.pct_of_peak AS batched_pct_of_peak, t.pct_of_peak AS triton_pct_of_peak,
       b.correct AND n.correct AND coalesce(t.correct, true) AND coalesce(tl.correct, true) AS correct,
       b.bytes_moved >= 256 * 1024 * 1024 AS target_size, b.dram_sized,
       coalesce(b.over_roof OR n.over_roof OR coalesce(t.over_roof, false) OR coalesce(tl.over_roof, false),
                b.pct_of_roof > 1.05 OR n.pct_of_roof > 1.05) AS over_roof,
       b.spread_wide OR n.spread_wide OR coalesce(t.spread_wide, false) AS spread_wide
FROM compaction b
JOIN compaction n ON n.run_id = b.run_id AND n.bytes_moved = b.bytes_moved AND n.method = 'naive'
LEFT JOIN compaction t ON t.run_id = b.run_id AND t.bytes_moved = b.bytes_moved AND t.method = 'triton'
LEFT JOIN compaction tl ON tl.run_id = b.run_id AND tl.bytes_moved = b.bytes_moved AND tl.method = 'triton_layers'
JOIN runs r ON r.run_id = b.run_id
WHERE b.method = 'batched'
ORDER BY b.run_id, b.bytes_moved;
