-- One line per run: measured bytes/token (longest uncapped prefill) against the formula.
WITH uncapped AS (
  SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY seq_len DESC, batch_size DESC) AS rn
  FROM cache_tensors WHERE cached_tokens = seq_len
)
SELECT u.run_id, r.model, r.dtype, r.device_name, u.bytes_per_token AS measured_bytes_per_token,
       u.formula_bytes_per_token,
       u.bytes_per_token / u.formula_bytes_per_token AS ratio,
       (SELECT bool_and(match) FROM cache_tensors a WHERE a.run_id = u.run_id) AS all_match,
       (SELECT count(*) FROM cache_tensors a WHERE a.run_id = u.run_id) AS n_shapes
FROM uncapped u JOIN runs r USING (run_id)
WHERE rn = 1
ORDER BY u.run_id;
