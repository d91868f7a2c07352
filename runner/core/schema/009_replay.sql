-- Schema version 9: `kvreport replay`, request traces replayed through a block-level prefix cache
-- (runner/replay/). One row per replay in `replays` (its setup, the unlimited-capacity ceiling and the
-- smallest GPU count reaching the target share of it, with and without a host offload tier); the hit-rate
-- curve per pool size in `replay_curve` (policy 'lru': GPU pool only; 'lru+host': with the offload tier);
-- the TTL pools beside LRU in `replay_ttl`; the rejected lines in `replay_rejects`. Hit rates are
-- token-weighted (hit prompt tokens / prompt tokens), from a simulation, never measured on an engine.
CREATE TABLE replays(replay_id VARCHAR NOT NULL, created_at TIMESTAMP, sources VARCHAR, shapes VARCHAR,
    model VARCHAR, dtype VARCHAR, gpu VARCHAR, gpu_bytes BIGINT, tp INTEGER, engine_block_tokens INTEGER,
    trace_block_tokens INTEGER, block_mapping VARCHAR, block_bytes_per_rank BIGINT, block_bytes_host BIGINT,
    pool_blocks_per_group BIGINT, pool_basis VARCHAR, decode_tokens_per_s DOUBLE, n_lines BIGINT,
    n_requests BIGINT, n_rejects BIGINT, input_tokens BIGINT, ceiling_hit_rate DOUBLE,
    ceiling_prefill_tokens_saved BIGINT, ceiling_tokens BIGINT, target DOUBLE, gpus_for_target INTEGER,
    hit_rate_at_target DOUBLE, host_bytes_per_gpu BIGINT, gpus_for_target_with_host INTEGER,
    host_bytes_at_target BIGINT, duration_s DOUBLE);
CREATE TABLE replay_curve(replay_id VARCHAR NOT NULL, policy VARCHAR, capacity_tokens BIGINT,
    capacity_bytes BIGINT, gpus INTEGER, host_bytes BIGINT, hit_rate DOUBLE, prefill_tokens_saved BIGINT,
    peak_blocks BIGINT, mean_blocks DOUBLE, evictions BIGINT, unadmitted BIGINT);
CREATE TABLE replay_ttl(replay_id VARCHAR NOT NULL, ttl_s INTEGER, hit_rate DOUBLE, prefill_tokens_saved BIGINT,
    peak_blocks BIGINT, mean_blocks DOUBLE, expired BIGINT);
CREATE TABLE replay_rejects(replay_id VARCHAR NOT NULL, file VARCHAR, line BIGINT, field VARCHAR, reason VARCHAR);
