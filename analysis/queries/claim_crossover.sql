-- Claims ledger, crossover: where GPT-2's and 7B models' KV caches outweigh their weights. Rows with
-- run_id NULL are the seed's arithmetic, redone with the formula rows (config + meta-device parameter count,
-- identical in every run; the newest run's are used); run rows use a run's measured model when it is one
-- of the architectures a claim is about. Tokens are per request; weights and KV in the same dtype.
WITH f AS (  -- formula rows of the newest run that has any
  SELECT * FROM crossover
  WHERE source = 'formula' AND run_id = (SELECT max(run_id) FROM crossover WHERE source = 'formula')
),
m AS (SELECT * FROM crossover WHERE source = 'measured'),
g AS (  -- GPT-2 batch 1: the formula row (run_id NULL) and every measured gpt2 run
  SELECT NULL::INTEGER AS run_id, 'formula' AS src, * EXCLUDE (run_id, source) FROM f WHERE model = 'gpt2' AND batch_size = 1
  UNION ALL
  SELECT run_id, 'measured', * EXCLUDE (run_id, source) FROM m WHERE model = 'gpt2' AND batch_size = 1
),
l7 AS (  -- 7B/8B models: batch 1 and 64, per source
  SELECT run_id, source, model, n_heads, n_kv_heads, weight_bytes, kv_bytes_per_token,
         max(crossover_tokens) FILTER (WHERE batch_size = 1) AS t1,
         max(crossover_tokens) FILTER (WHERE batch_size = 2) AS t2,
         max(crossover_tokens) FILTER (WHERE batch_size = 64) AS t64,
         max(crossover_total_tokens) FILTER (WHERE batch_size = 64) AS total64
  FROM crossover
  WHERE model IN ('llama-2-7b', 'llama-3.1-8b', 'mistral-7b', 'qwen2.5-7b')
    AND (source = 'measured' OR run_id = (SELECT max(run_id) FROM f))
  GROUP BY ALL
),
l7f AS (SELECT * FROM l7 WHERE source = 'formula'),
claims AS (
  -- 1. GPT-2's crossover for one request.
  SELECT 'crossover-gpt2-one-request' AS claim_id, 1 AS ord, run_id,
         format('{}: {:,} B weights ({:.2f} MiB) / {:,} B per token = {:,.1f} tokens', src, weight_bytes,
                weight_bytes / 2 ^ 20, kv_bytes_per_token::BIGINT, crossover_tokens) AS measured_value,
         CASE WHEN floor(crossover_tokens) = 6751 THEN $confirmed ELSE $refuted END AS verdict,
         CASE WHEN floor(crossover_tokens) = 6751
              THEN format('{:,} parameters (tied embeddings once) x {} B over 2 x 12 x 12 x 64 x {} B; the profiler write-up''s 237 MB is MiB. It is past GPT-2''s {:,}-token context: one request never gets there',
                          parameters, dtype_bytes, dtype_bytes, max_positions)
              ELSE format('{:,.1f} tokens, not 6,751', crossover_tokens) END AS reasoning
  FROM g
  UNION ALL
  -- 2. "KV > model at 16 requests x 512 tokens".
  SELECT 'crossover-gpt2-16x512', 2, run_id,
         format('{}: 16 x 512 = 8,192 tokens = {:.2f}x the weights; KV passes them from {} requests of 512 tokens',
                src, 8192 / crossover_tokens, floor(crossover_tokens / 512)::BIGINT + 1),
         CASE WHEN 8192 > crossover_tokens THEN $confirmed ELSE $refuted END,
         CASE WHEN 8192 > crossover_tokens AND floor(crossover_tokens / 512) + 1 < 16
              THEN format('true at 16, but 16 is not the threshold: {} requests of 512 tokens ({:,} tokens) already outweigh the weights',
                          floor(crossover_tokens / 512)::BIGINT + 1, (floor(crossover_tokens / 512)::BIGINT + 1) * 512)
              WHEN 8192 > crossover_tokens THEN '16 requests is the first count that outweighs the weights'
              ELSE 'KV of 16 x 512 tokens is still below the weights' END
  FROM g
  UNION ALL
  -- 3. "For 7B models (~14GB weights): crossover at ~388 tokens x batch_size".
  SELECT 'crossover-7b-388', 3, NULL,
         (SELECT string_agg(format('{} {} at batch 1, {} at 64', model,
                                   coalesce(format('{:,.0f} tokens', t1), 'never (sliding window caps the cache)'),
                                   coalesce(format('{:,.0f}', t64), 'never')), '; ' ORDER BY kv_bytes_per_token DESC, model) FROM l7f),
         CASE WHEN abs(ln(t1 / 388)) > ln(2) OR t2 < t1 THEN $refuted ELSE $confirmed END,
         format('MHA llama-2-7b: {:.1f} GB / {:,} B per token = {:,.0f} tokens for one request; per request it falls as 1/batch ({:,.0f} at batch 2), it does not grow x batch, and the whole batch always holds {:,.0f}. GQA llama-3.1-8b caches {} of {} heads: {:,.0f} tokens ({:.2f}x, with {:.2f}x the weights). 14e9 / 36,000 = {:,.0f}: 388 looks like GPT-2''s 36 KB/token applied to 7B weights with the thousands dropped',
                weight_bytes / 1e9, kv_bytes_per_token::BIGINT, t1, t2, t1,
                g_kv, g_heads, g_t1, g_t1 / t1, g_weights / weight_bytes, 14e9 / 36000)
  FROM l7f LEFT JOIN (SELECT n_kv_heads AS g_kv, n_heads AS g_heads, t1 AS g_t1, weight_bytes AS g_weights
                      FROM l7f WHERE model = 'llama-3.1-8b') q ON true
  WHERE model = 'llama-2-7b'
  UNION ALL
  SELECT 'crossover-7b-388', 3, run_id,
         format('measured {}: {:,.0f} tokens at batch 1, {} at 64', model, t1, coalesce(format('{:,.0f}', t64), 'never')),
         CASE WHEN t1 IS NULL OR abs(ln(t1 / 388)) > ln(2) OR t2 < t1 THEN $refuted ELSE $confirmed END,
         format('{} KV heads of {}: {:,} B per token against {:.1f} GB of weights', n_kv_heads, n_heads,
                kv_bytes_per_token::BIGINT, weight_bytes / 1e9)
  FROM l7 WHERE source = 'measured'
),
unmeasured AS (
  SELECT *, 'no crossover rows in this DB' AS reasoning
  FROM (VALUES ('crossover-gpt2-one-request', 1), ('crossover-gpt2-16x512', 2), ('crossover-7b-388', 3)) AS e(claim_id, ord)
  WHERE NOT EXISTS (SELECT 1 FROM claims c WHERE c.claim_id = e.claim_id)
),
text AS (
  SELECT * FROM (VALUES
    ('crossover-gpt2-one-request', 'GPT-2 (237 MB): crossover token count 6,751 tokens for one request', '6,751 tokens'),
    ('crossover-gpt2-16x512', 'GPT-2 (237 MB): KV > model at 16 requests x 512 tokens', '16 x 512'),
    ('crossover-7b-388', 'For 7B models (~14 GB weights): KV crossover at ~388 tokens x batch_size', '~388 tokens x batch_size')
  ) AS t(claim_id, claim, seed_value)
),
{include:_claim_ledger}
SELECT claim_id, 'profiler seed' AS source, claim, seed_value, 'RTX 2070 (GPT-2, float16)' AS seed_hardware,
       'arithmetic' AS basis, true AS claim_on_gpu, run_id, measured_value, verdict, reasoning
FROM ledger
ORDER BY ord, run_id NULLS FIRST;
