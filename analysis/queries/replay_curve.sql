-- One replay's hit rate (token-weighted) against pool size: 'lru' the GPU pool alone, 'lru+host' with the
-- offload tier; gpus NULL marks a pool size asked for with --capacity-tokens rather than a GPU count.
SELECT policy, capacity_tokens, capacity_bytes, gpus, host_bytes, hit_rate, prefill_tokens_saved, peak_blocks,
       mean_blocks, evictions, unadmitted
FROM replay_curve
WHERE replay_id = $replay_id
ORDER BY policy, capacity_tokens, gpus NULLS LAST;
