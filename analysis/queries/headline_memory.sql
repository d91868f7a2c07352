-- Headline: the measured KV bytes per token of each run, and whether the formula matched every shape.
-- Bytes per token is the cache's growth (kv_growth in _macros.sql): a hybrid model's constant state
-- (linear-attention or Mamba) is said apart, not spread over a short prefill.
WITH growth AS (SELECT * FROM kv_growth()),
shapes AS (
  SELECT run_id, count(*) AS n, count(*) FILTER (WHERE match) AS n_match FROM cache_tensors GROUP BY run_id
)
SELECT g.run_id,
       CASE WHEN g.constant_bytes > 0 THEN
         format('The KV cache of {} at {} grows by {:,} bytes per token, on top of {:,} bytes of constant state '
                'per request; the formula matches {} of {} measured shapes.', r.model, r.dtype,
                g.per_token::BIGINT, g.constant_bytes,
                s.n_match, s.n)
       ELSE
         format('The KV cache of {} at {} holds {:,} bytes per token; the formula matches {} of {} measured shapes.',
                r.model, r.dtype, g.per_token::BIGINT, s.n_match, s.n)
       END AS finding,
       g.per_token::DOUBLE AS value, 'B/token' AS unit, 'memory.html' AS page
FROM growth g JOIN runs r USING (run_id) JOIN shapes s USING (run_id)
ORDER BY g.run_id;
