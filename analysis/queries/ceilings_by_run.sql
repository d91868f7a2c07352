-- The device's ceilings per run: theoretical peak DRAM bandwidth (NULL on CPUs) and the measured copy roof.
SELECT c.run_id, r.model, r.dtype, r.device_kind, c.device_name, c.peak_gbs, c.peak_source, c.roof_gbs,
       c.roof_p25_gbs, c.roof_p75_gbs, c.roof_n, c.roof_worst_round_gbs, c.roof_bytes, c.buffer_bytes,
       c.roof_pct_of_peak
FROM device_ceilings c JOIN runs r USING (run_id)
ORDER BY c.run_id;
