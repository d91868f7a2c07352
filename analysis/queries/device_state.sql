-- NVML readings before and after each experiment (CUDA runs with nvidia-ml-py only): SM and memory clocks,
-- power, temperature and the active clock-event (throttle) reasons, so a slow run can be told from a
-- throttled one. kvreport never changes clocks or power limits; these are read as found.
SELECT s.run_id, s.experiment, s.moment, s.sm_clock_mhz, s.mem_clock_mhz, s.power_w, s.temp_c, s.throttle_reasons,
       coalesce(s.throttle_reasons NOT IN ('none', 'gpu_idle'), false) AS throttled,
       e.started_at
FROM device_state s LEFT JOIN experiments e USING (run_id, experiment)
ORDER BY s.run_id, e.started_at, s.experiment, s.moment DESC;
