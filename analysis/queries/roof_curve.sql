-- The roof curve per run: copy (bytes read + written) and read (a streaming sum, bytes read) bandwidth at
-- every size the experiments used, each the best of its rounds. dram_sized: at least 4x the last-level
-- cache (GPU L2, CPU LLC), so a DRAM figure; smaller sizes are cache roofs, and only ever compared with
-- workloads of the same size. measured_with: 'alone', or the experiment whose variants the roof was timed
-- interleaved with (compaction: the roof its rows are divided by, measured at the same moments).
SELECT c.run_id, r.model, r.device_kind, r.device_name, c.op, c.bytes, c.gbs, c.p25_gbs, c.p75_gbs, c.n,
       c.rounds, c.worst_round_gbs, c.llc_bytes, c.flushed, c.threads, c.host_ms, c.measured_with,
       c.bytes >= 4 * c.llc_bytes AS dram_sized
FROM roof_curve c JOIN runs r USING (run_id)
ORDER BY c.run_id, c.op, c.bytes;
