-- Comparison metrics, memory (the compare_*.sql contract: topic, metric, run_id, value, unit, better
-- ['lower'|'higher'|NULL], p25, p75 (NULL when not timed), summary (shown side by side), page).
WITH uncapped AS (
  SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY seq_len DESC, batch_size DESC) AS rn
  FROM cache_tensors WHERE cached_tokens = seq_len
)
SELECT 'memory' AS topic, 'KV cache per token' AS metric, run_id, bytes_per_token::DOUBLE AS value,
       'B/token' AS unit, 'lower' AS better, NULL::DOUBLE AS p25, NULL::DOUBLE AS p75, true AS summary,
       'memory.html' AS page
FROM uncapped WHERE rn = 1
UNION ALL
SELECT 'memory', format('KV cache per token, seq {} x batch {}', seq_len, batch_size), run_id,
       bytes_per_token::DOUBLE, 'B/token', 'lower', NULL, NULL, false, 'memory.html'
FROM cache_tensors
ORDER BY ALL;
