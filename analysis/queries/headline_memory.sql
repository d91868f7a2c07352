-- Headline: the measured KV bytes per token of each run, and whether the formula matched every shape.
-- Bytes per token is the cache's growth between the two longest lengths below every window (same batch): a
-- hybrid model's constant state (linear-attention or Mamba) is said apart, not spread over a short prefill.
WITH uncapped AS (
  SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY seq_len DESC, batch_size DESC) AS rn
  FROM kv_memory_v2 m WHERE cached_tokens = seq_len
    AND NOT EXISTS (SELECT 1 FROM kv_per_layer l  -- no layer holds fewer tokens than the prefill (a window)
                    WHERE l.run_id = m.run_id AND l.seq_len = m.seq_len AND l.batch_size = m.batch_size
                      AND l.cached_tokens < l.seq_len)
),
top AS (SELECT * FROM uncapped WHERE rn = 1),
prev AS (
  SELECT u.run_id, u.seq_len, u.kv_bytes,
         row_number() OVER (PARTITION BY u.run_id ORDER BY u.seq_len DESC) AS k
  FROM uncapped u JOIN top t ON u.run_id = t.run_id AND u.batch_size = t.batch_size AND u.seq_len < t.seq_len
),
growth AS (
  SELECT t.run_id,
         coalesce((t.kv_bytes - p.kv_bytes) / ((t.seq_len - p.seq_len) * t.batch_size),
                  t.bytes_per_token) AS per_token,
         t.kv_bytes, t.seq_len, t.batch_size
  FROM top t LEFT JOIN prev p ON p.run_id = t.run_id AND p.k = 1
),
shapes AS (
  SELECT run_id, count(*) AS n, count(*) FILTER (WHERE match) AS n_match FROM kv_memory_v2 GROUP BY run_id
)
SELECT g.run_id,
       CASE WHEN round(g.kv_bytes - g.per_token * g.seq_len * g.batch_size) > 0 THEN
         format('The KV cache of {} at {} grows by {:,} bytes per token, on top of {:,} bytes of constant state '
                'per request; the formula matches {} of {} measured shapes.', r.model, r.dtype,
                g.per_token::BIGINT, (round(g.kv_bytes - g.per_token * g.seq_len * g.batch_size) / g.batch_size)::BIGINT,
                s.n_match, s.n)
       ELSE
         format('The KV cache of {} at {} holds {:,} bytes per token; the formula matches {} of {} measured shapes.',
                r.model, r.dtype, g.per_token::BIGINT, s.n_match, s.n)
       END AS finding,
       g.per_token::DOUBLE AS value, 'B/token' AS unit, 'memory.html' AS page
FROM growth g JOIN runs r USING (run_id) JOIN shapes s USING (run_id)
ORDER BY g.run_id;
