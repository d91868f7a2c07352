-- Headline: where the run's own model's KV cache outweighs its weights (measured), beside the MHA and GQA
-- 7B/8B figures from the same run's formula rows.
WITH one AS (SELECT * FROM crossover WHERE batch_size = 1),
me AS (SELECT * FROM one WHERE source = 'measured'),
b64 AS (SELECT run_id, crossover_tokens AS t64 FROM crossover WHERE source = 'measured' AND batch_size = 64),
mha AS (SELECT run_id, crossover_tokens AS llama2 FROM one WHERE source = 'formula' AND model = 'llama-2-7b'),
gqa AS (SELECT run_id, crossover_tokens AS llama3 FROM one WHERE source = 'formula' AND model = 'llama-3.1-8b')
SELECT me.run_id,
       format('{}''s KV cache outweighs its weights from {:,.0f} tokens for one request ({:,.0f} per request at batch 64){}; llama-2-7b (MHA) {:,.0f} tokens, llama-3.1-8b (GQA, 8 KV heads) {:,.0f}.',
              me.model, me.crossover_tokens, b64.t64,
              CASE WHEN me.exceeds_max_positions THEN format(', past its {:,}-token context', me.max_positions) ELSE '' END,
              mha.llama2, gqa.llama3) AS finding,
       me.crossover_tokens::DOUBLE AS value, 'tokens' AS unit, 'crossover.html' AS page
FROM me LEFT JOIN b64 USING (run_id) LEFT JOIN mha USING (run_id) LEFT JOIN gqa USING (run_id)
ORDER BY me.run_id;
