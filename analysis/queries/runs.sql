-- Every run with the environment a reader needs to judge its numbers.
SELECT run_id, status, started_at, finished_at, device_kind, device_name, model, model_source, dtype,
       weights_random, quick, iterations, gpu_name, gpu_memory_bytes, driver_version, cuda_version,
       torch_version, transformers_version, python_version, os, cpu, cpu_count, host_memory_bytes,
       command_line, label
FROM runs
ORDER BY run_id;
