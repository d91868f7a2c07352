-- Claims ledger, token article, judged on replayed real traffic: each `kvreport replay` (a published or
-- user-supplied request trace through a simulated block-level prefix cache, runner/replay/) bounds the
-- article's bill claim and measures its capacity claim on that traffic. Simulations, labelled as such: the
-- hit rates come from the trace's own prefix hashes, the bytes from the model facts (analytic).
WITH r AS (
  SELECT replay_id, sources, model, gpu, tp, n_requests, ceiling_hit_rate, ceiling_tokens, target,
         gpus_for_target, hit_rate_at_target, pool_blocks_per_group * engine_block_tokens AS pool_tokens,
         created_at
  FROM replays
),
at_target AS (  -- the pool that reaches the target share of the ceiling
  SELECT r.*, c.capacity_tokens AS target_tokens
  FROM r LEFT JOIN replay_curve c ON c.replay_id = r.replay_id AND c.policy = 'lru' AND c.gpus = r.gpus_for_target
),
ttl AS (
  SELECT replay_id, hit_rate AS ttl5_hit_rate FROM replay_ttl WHERE ttl_s = 300
),
claims AS (
  -- "55% lower API bills": a prefix cache can at most stop charging the prompt tokens it hits, so the bill
  -- falls by at most the ceiling hit rate (all prompt tokens served free, output free too).
  SELECT 'token-api-bill-replayed' AS claim_id, 1 AS ord,
         format('replayed real traffic (simulation), {}: {:,} requests of {}; at unlimited cache capacity {:.1f}% of prompt tokens hit, so a prefix cache can cut the bill by at most {:.1f}%',
                replay_id, n_requests, sources, 100 * ceiling_hit_rate, 100 * ceiling_hit_rate) AS measured_value,
         CASE WHEN ceiling_hit_rate < 0.55 THEN $refuted ELSE $not_measured END AS verdict,
         CASE WHEN ceiling_hit_rate < 0.55
              THEN 'even free cached tokens and free output cannot save 55% when under 55% of the prompt tokens repeat a cached prefix: with its prompts laid out as they were, this traffic''s prefix reuse caps the saving below the claim (a layout with a longer stable prefix could raise it)'
              ELSE 'this traffic reuses enough prefix for the claim to be possible; the bill itself needs prices and the provider''s cache: audit the real logs (kvreport audit)' END AS reasoning
  FROM r
  UNION ALL
  -- "Eviction lets servers handle twice the sessions": LRU eviction reaches the target share of the
  -- ceiling in a pool this many times smaller than never evicting (every distinct block kept) needs.
  SELECT 'token-double-capacity-replayed', 2,
         format('replayed real traffic (simulation), {}: LRU eviction gives {:.1f}% ({:.0f}% of the ceiling {:.1f}%) in {:,} tokens of KV pool ({} {}s, TP {}, {}) where never evicting holds {:,}: {:.1f}x the traffic per GPU{}',
                replay_id, 100 * hit_rate_at_target, 100 * target, 100 * ceiling_hit_rate, target_tokens,
                gpus_for_target, gpu, tp, model, ceiling_tokens, ceiling_tokens / target_tokens,
                coalesce(format('; a 5-minute TTL keeps {:.1f}%', 100 * ttl5_hit_rate), '')),
         CASE WHEN ceiling_tokens >= 2 * target_tokens THEN $confirmed ELSE $refuted END,
         CASE WHEN ceiling_tokens >= 2 * target_tokens
              THEN 'on this traffic most of what a never-evicting cache holds is never hit again: evicting the least recently used blocks serves the same traffic, near the same hit rate, in under half the memory'
              ELSE 'on this traffic the blocks a never-evicting cache holds keep being reused: eviction frees less than half the memory at the target hit rate' END
  FROM at_target LEFT JOIN ttl USING (replay_id)
  WHERE target_tokens IS NOT NULL
  UNION ALL
  SELECT 'token-api-bill-replayed', 1, NULL, $not_measured,
         'no replayed traffic in this DB: kvreport replay TRACE --model M --db FILE (e.g. the Mooncake conversation trace)'
  WHERE NOT EXISTS (SELECT 1 FROM r)
  UNION ALL
  SELECT 'token-double-capacity-replayed', 2, NULL, $not_measured,
         'no replay in this DB reached its target share of the ceiling: kvreport replay TRACE --model M --db FILE'
  WHERE NOT EXISTS (SELECT 1 FROM at_target WHERE target_tokens IS NOT NULL)
),
text AS (
  SELECT * FROM (VALUES
    ('token-api-bill-replayed', 'Teams report a 55% reduction in API bills from prefix caching (judged on replayed real traffic)', '55% lower API bills'),
    ('token-double-capacity-replayed', 'Eviction lets servers handle twice the concurrent user sessions (judged on replayed real traffic)', '2x concurrent sessions')
  ) AS t(claim_id, claim, seed_value)
)
SELECT c.claim_id, 'token article' AS source, t.claim, t.seed_value,
       'none stated (a constant, three hand-made sessions)' AS seed_hardware,
       -- A replay is computed from the trace and the model facts: exact on any machine, never timed.
       'arithmetic' AS basis, false AS claim_on_gpu, NULL::INTEGER AS run_id, c.measured_value, c.verdict, c.reasoning
FROM claims c JOIN text t USING (claim_id)
ORDER BY c.ord, c.measured_value NULLS FIRST;
