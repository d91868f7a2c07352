-- Every run with the environment a reader needs to judge its numbers, plus what its experiments did.
WITH exp AS (
  SELECT run_id,
         count(*) FILTER (WHERE status = 'ok') AS n_ok,
         count(*) FILTER (WHERE status = 'skipped') AS n_skipped,
         count(*) FILTER (WHERE status = 'failed') AS n_failed
  FROM experiments GROUP BY run_id
)
SELECT r.run_id, r.status, r.started_at, r.finished_at,
       date_diff('second', r.started_at, r.finished_at) AS duration_s,
       r.device_kind, r.device_name, r.model, r.model_source, r.dtype,
       r.weights_random, r.quick, r.iterations, r.gpu_name, r.gpu_memory_bytes, r.gpu_count,
       r.driver_version, r.cuda_version, r.torch_version, r.transformers_version, r.python_version,
       r.kvreport_version, r.kvreport_commit, r.os, r.cpu, r.cpu_count, r.host_memory_bytes, r.command_line, r.label,
       coalesce(e.n_ok, 0) AS n_ok, coalesce(e.n_skipped, 0) AS n_skipped, coalesce(e.n_failed, 0) AS n_failed
FROM runs r LEFT JOIN exp e USING (run_id)
ORDER BY r.run_id;
