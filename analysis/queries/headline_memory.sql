-- Headline: the measured KV bytes per token of each run, and whether the formula matched every shape.
WITH uncapped AS (
  SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY seq_len DESC, batch_size DESC) AS rn
  FROM kv_memory_v2 WHERE cached_tokens = seq_len
),
shapes AS (
  SELECT run_id, count(*) AS n, count(*) FILTER (WHERE match) AS n_match FROM kv_memory_v2 GROUP BY run_id
)
SELECT u.run_id,
       format('The KV cache of {} at {} holds {:,} bytes per token; the formula matches {} of {} measured shapes.',
              r.model, r.dtype, u.bytes_per_token::BIGINT, s.n_match, s.n) AS finding,
       u.bytes_per_token::DOUBLE AS value, 'B/token' AS unit, 'memory.html' AS page
FROM uncapped u JOIN runs r USING (run_id) JOIN shapes s USING (run_id)
WHERE u.rn = 1
ORDER BY u.run_id;
