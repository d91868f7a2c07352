-- One replay's TTL pools (unlimited capacity, unreferenced blocks dropped ttl_s after release).
SELECT ttl_s, hit_rate, prefill_tokens_saved, peak_blocks, mean_blocks, expired
FROM replay_ttl
WHERE replay_id = $replay_id
ORDER BY ttl_s;
