-- Every `kvreport replay` in the DB, newest first: its setup, the unlimited-capacity ceiling and the smallest
-- GPU count reaching the target share of it (simulated from a trace, never measured on an engine).
SELECT replay_id, created_at, sources, shapes, model, dtype, gpu, gpu_bytes, tp, engine_block_tokens,
       trace_block_tokens, block_mapping, block_bytes_per_rank, block_bytes_host, pool_blocks_per_group,
       pool_blocks_per_group * engine_block_tokens AS pool_tokens_per_group, pool_basis, decode_tokens_per_s,
       n_lines, n_requests, n_rejects, input_tokens, ceiling_hit_rate, ceiling_prefill_tokens_saved,
       ceiling_tokens, target, target * ceiling_hit_rate AS target_hit_rate, gpus_for_target, hit_rate_at_target,
       host_bytes_per_gpu, gpus_for_target_with_host, host_bytes_at_target, duration_s
FROM replays
ORDER BY created_at DESC, replay_id DESC;
