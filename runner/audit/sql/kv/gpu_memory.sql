-- The newest run's total GPU memory (an upper bound on what KV can use).
SELECT run_id, gpu_name, gpu_memory_bytes FROM runs WHERE gpu_memory_bytes IS NOT NULL ORDER BY run_id DESC LIMIT 1;
