-- Schema version 1: the first released kvreport schema (kvreport 0.1.0, the published reference site).
-- Every later version is a file NNN_*.sql beside this one that takes version N-1 to N; a new DB is
-- made by applying them all in order, so a fresh file and a migrated one have the same tables.

CREATE TABLE kvreport_meta (
    key VARCHAR PRIMARY KEY,
    value VARCHAR
);

CREATE TABLE runs (
    run_id INTEGER PRIMARY KEY,
    status VARCHAR NOT NULL,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    device_kind VARCHAR,
    device_name VARCHAR,
    model VARCHAR,
    model_source VARCHAR,
    dtype VARCHAR,
    weights_random BOOLEAN,
    quick BOOLEAN,
    iterations VARCHAR,
    gpu_name VARCHAR,
    gpu_memory_bytes BIGINT,
    gpu_count INTEGER,
    driver_version VARCHAR,
    cuda_version VARCHAR,
    torch_version VARCHAR,
    transformers_version VARCHAR,
    python_version VARCHAR,
    kvreport_version VARCHAR,
    os VARCHAR,
    cpu VARCHAR,
    cpu_count INTEGER,
    host_memory_bytes BIGINT,
    host VARCHAR,
    command_line VARCHAR,
    label VARCHAR
);

CREATE TABLE experiments (
    run_id INTEGER NOT NULL,
    experiment VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    reason VARCHAR,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    duration_s DOUBLE
);

CREATE TABLE kv_memory (
    run_id INTEGER NOT NULL,
    seq_len INTEGER,
    batch_size INTEGER,
    before_bytes BIGINT,
    after_bytes BIGINT,
    delta_bytes BIGINT,
    bytes_per_token DOUBLE,
    cache_only_delta_bytes BIGINT,
    cache_only_bytes_per_token DOUBLE,
    logits_bytes BIGINT,
    peak_delta_bytes BIGINT,
    formula_bytes_per_token BIGINT,
    expected_kv_bytes BIGINT
);

CREATE TABLE device_ceilings (
    run_id INTEGER NOT NULL,
    device_name VARCHAR,
    peak_gbs DOUBLE,
    peak_source VARCHAR,
    roof_gbs DOUBLE,
    roof_p25_gbs DOUBLE,
    roof_p75_gbs DOUBLE,
    roof_n INTEGER,
    roof_bytes BIGINT,
    roof_rounds INTEGER,
    roof_worst_round_gbs DOUBLE,
    buffer_bytes BIGINT,
    roof_pct_of_peak DOUBLE
);

CREATE TABLE kv_memory_v2 (
    run_id INTEGER NOT NULL,
    seq_len INTEGER,
    batch_size INTEGER,
    kv_bytes BIGINT,
    bytes_per_token DOUBLE,
    formula_bytes_per_token BIGINT,
    expected_kv_bytes BIGINT,
    cached_tokens INTEGER,
    n_layers INTEGER,
    n_heads INTEGER,
    n_kv_heads INTEGER,
    head_dim INTEGER,
    match BOOLEAN
);

CREATE TABLE kv_per_layer (
    run_id INTEGER NOT NULL,
    layer INTEGER,
    seq_len INTEGER,
    batch_size INTEGER,
    k_bytes BIGINT,
    v_bytes BIGINT,
    cached_tokens INTEGER,
    k_shape VARCHAR
);

CREATE TABLE kv_decode_cost_v2 (
    run_id INTEGER NOT NULL,
    prefix_len INTEGER,
    batch_size INTEGER,
    step_ms DOUBLE,
    p25_ms DOUBLE,
    p75_ms DOUBLE,
    n INTEGER,
    spread_wide BOOLEAN,
    kv_growth_bytes BIGINT,
    expected_growth_bytes BIGINT,
    growth_match BOOLEAN,
    bytes_read BIGINT,
    achieved_gbs DOUBLE,
    pct_of_peak DOUBLE,
    pct_of_roof DOUBLE,
    weight_bytes BIGINT,
    kv_bytes BIGINT,
    roof_gbs DOUBLE,
    peak_gbs DOUBLE,
    weights_floor_ms DOUBLE,
    bandwidth_floor_ms DOUBLE,
    restore_method VARCHAR
);

CREATE TABLE kv_frag_v2 (
    run_id INTEGER NOT NULL,
    allocator VARCHAR,
    phase VARCHAR,
    allocated_bytes BIGINT,
    reserved_bytes BIGINT,
    inactive_split_bytes BIGINT,
    num_alloc_retries BIGINT,
    live_requests INTEGER,
    evicted_bytes BIGINT,
    n_requests INTEGER,
    kv_live_bytes BIGINT,
    setting_confirmed BOOLEAN
);

CREATE TABLE kv_compact_v2 (
    run_id INTEGER NOT NULL,
    method VARCHAR,
    bytes_moved BIGINT,
    time_ms DOUBLE,
    p25_ms DOUBLE,
    p75_ms DOUBLE,
    n INTEGER,
    spread_wide BOOLEAN,
    gbs DOUBLE,
    pct_of_peak DOUBLE,
    pct_of_roof DOUBLE,
    correct BOOLEAN,
    n_requests INTEGER,
    seq_len INTEGER,
    kv_bytes BIGINT,
    n_slots INTEGER,
    launches INTEGER,
    roof_gbs DOUBLE,
    peak_gbs DOUBLE,
    cache_flushed BOOLEAN
);

CREATE TABLE kv_pressure_v3 (
    run_id INTEGER NOT NULL,
    seq_len INTEGER,
    n_requests INTEGER,
    kv_bytes BIGINT,
    allocated_bytes BIGINT,
    reserved_bytes BIGINT,
    allocated_delta_bytes BIGINT,
    memory_source VARCHAR
);

CREATE TABLE kv_capacity_v3 (
    run_id INTEGER NOT NULL,
    seq_len INTEGER,
    max_requests_measured INTEGER,
    theoretical_max_requests BIGINT,
    bytes_per_request BIGINT,
    free_bytes BIGINT,
    ceiling_bytes BIGINT,
    capacity_tokens BIGINT,
    stop_reason VARCHAR,
    ceiling_fraction DOUBLE,
    request_cap INTEGER,
    time_budget_s DOUBLE,
    kv_bytes BIGINT,
    allocated_delta_bytes BIGINT,
    weight_bytes BIGINT,
    prefill_overhead_bytes BIGINT,
    kv_budget_bytes BIGINT,
    max_concurrency DOUBLE,
    ceiling_max_requests BIGINT,
    formula_bytes_per_request BIGINT,
    dtype_bytes INTEGER,
    memory_source VARCHAR,
    device_usable_after BOOLEAN,
    elapsed_s DOUBLE,
    notes VARCHAR
);

CREATE TABLE kv_interference_v3 (
    run_id INTEGER NOT NULL,
    mode VARCHAR,
    time_ms DOUBLE,
    p25_ms DOUBLE,
    p75_ms DOUBLE,
    n INTEGER,
    spread_wide BOOLEAN,
    concurrency VARCHAR,
    bytes_moved BIGINT,
    gbs DOUBLE,
    bound_ms DOUBLE,
    bound_violated BOOLEAN,
    bound_note VARCHAR,
    roof_gbs DOUBLE,
    pct_of_roof DOUBLE,
    peak_gbs DOUBLE,
    compact_bytes BIGINT,
    decode_bytes BIGINT,
    decode_steps INTEGER,
    decode_batch INTEGER,
    prefix_len INTEGER,
    n_requests INTEGER,
    seq_len INTEGER,
    correct BOOLEAN
);

CREATE TABLE kv_crossover_v3 (
    run_id INTEGER NOT NULL,
    model VARCHAR,
    source VARCHAR,
    dtype VARCHAR,
    kv_bytes_per_token DOUBLE,
    weight_bytes BIGINT,
    batch_size INTEGER,
    crossover_tokens DOUBLE,
    n_heads INTEGER,
    n_kv_heads INTEGER,
    n_layers INTEGER,
    head_dim INTEGER,
    parameters BIGINT,
    dtype_bytes INTEGER,
    min_tokens_kv_exceeds BIGINT,
    crossover_total_tokens DOUBLE,
    sliding_window INTEGER,
    max_positions BIGINT,
    exceeds_max_positions BOOLEAN
);

CREATE TABLE prefix_reuse (
    run_id INTEGER NOT NULL,
    turn INTEGER,
    mode VARCHAR,
    n_sessions INTEGER,
    prompt_tokens INTEGER,
    cached_tokens INTEGER,
    computed_tokens INTEGER,
    time_ms DOUBLE,
    p25_ms DOUBLE,
    p75_ms DOUBLE,
    n INTEGER,
    spread_wide BOOLEAN,
    copy_ms DOUBLE,
    max_abs_logit_diff DOUBLE,
    logits_match BOOLEAN,
    system_tokens INTEGER,
    user_tokens INTEGER,
    assistant_tokens INTEGER
);

CREATE TABLE prefix_reuse_evict (
    run_id INTEGER NOT NULL,
    phase VARCHAR,
    sessions_held INTEGER,
    disconnected_held INTEGER,
    kv_bytes_held BIGINT,
    kv_bytes_expected BIGINT,
    allocated_bytes BIGINT,
    freed_bytes BIGINT,
    allocator_freed_bytes BIGINT,
    free_bytes BIGINT,
    free_source VARCHAR,
    mean_session_bytes DOUBLE,
    sessions_fit BIGINT,
    capacity_if_full DOUBLE
);

-- Token audits (runner/audit/). run_id is NULL for a standalone `kvreport audit` and the run's id for the
-- demo audit inside `kvreport run`. Column names follow the OpenTelemetry GenAI conventions where one exists:
--   gen_ai.usage.input_tokens                -> input_tokens  (ALL input tokens, cached ones included)
--   gen_ai.usage.cache_read.input_tokens     -> cached_input_tokens
--   gen_ai.usage.cache_creation.input_tokens -> cache_creation_input_tokens
--   gen_ai.usage.output_tokens               -> output_tokens
--   gen_ai.conversation.id                   -> session_id
--   gen_ai.provider.name / gen_ai.request.model / gen_ai.response.model -> provider_name, request_model,
--                                               response_model
-- Each provider's own convention is converted on the way in (runner/audit/sql/ingest_*.sql), so no query
-- downstream needs to know where a row came from.
CREATE TABLE audits (
    audit_id VARCHAR NOT NULL,
    run_id INTEGER,
    created_at TIMESTAMP,
    sources VARCHAR,
    format VARCHAR,
    model VARCHAR,
    kv_bytes_per_token DOUBLE,
    kv_bytes_source VARCHAR,
    kv_bytes_detail VARCHAR,
    n_calls BIGINT,
    n_sessions BIGINT,
    n_rejects BIGINT,
    input_tokens BIGINT,
    cached_input_tokens BIGINT,
    output_tokens BIGINT,
    system_tokens BIGINT,
    overall_pcer DOUBLE,
    overall_spor DOUBLE,
    spor_coverage DOUBLE,
    spor_reason VARCHAR,
    leakage_index DOUBLE,
    leakage_reason VARCHAR,
    idle_timeout_s DOUBLE,
    kv_byte_seconds DOUBLE,
    idle_kv_byte_seconds DOUBLE,
    window_start TIMESTAMP,
    window_end TIMESTAMP,
    memory_bytes BIGINT,
    memory_source VARCHAR,
    tokenizer VARCHAR,
    spor_max DOUBLE,
    kv_max_bytes BIGINT,
    n_spor_warnings BIGINT,
    n_kv_warnings BIGINT,
    content_calls BIGINT,
    bloat_reason VARCHAR,
    duration_s DOUBLE
);

CREATE TABLE token_calls (
    audit_id VARCHAR NOT NULL,
    run_id INTEGER,
    source VARCHAR,
    line BIGINT,
    format VARCHAR,
    session_id VARCHAR,
    start_time TIMESTAMP,
    end_time TIMESTAMP,
    disconnected_at TIMESTAMP,
    provider_name VARCHAR,
    request_model VARCHAR,
    response_model VARCHAR,
    input_tokens BIGINT,
    cached_input_tokens BIGINT,
    cache_creation_input_tokens BIGINT,
    output_tokens BIGINT,
    system_tokens BIGINT,
    system_tokens_source VARCHAR
);

CREATE TABLE token_rejects (
    audit_id VARCHAR NOT NULL,
    run_id INTEGER,
    source VARCHAR,
    line BIGINT,
    reason VARCHAR
);

CREATE TABLE token_audit (
    audit_id VARCHAR NOT NULL,
    run_id INTEGER,
    session_id VARCHAR,
    n_calls BIGINT,
    input_tokens BIGINT,
    cached_input_tokens BIGINT,
    system_tokens BIGINT,
    output_tokens BIGINT,
    pcer DOUBLE,
    spor DOUBLE,
    spor_reason VARCHAR,
    context_tokens BIGINT,
    kv_cache_bytes DOUBLE,
    first_seen TIMESTAMP,
    last_activity TIMESTAMP,
    disconnected_at TIMESTAMP,
    kv_byte_seconds DOUBLE,
    idle_kv_byte_seconds DOUBLE,
    spor_warning BOOLEAN,
    kv_warning BOOLEAN
);

CREATE TABLE token_leakage (
    audit_id VARCHAR NOT NULL,
    run_id INTEGER,
    sample INTEGER,
    t TIMESTAMP,
    offset_s DOUBLE,
    held_bytes DOUBLE,
    idle_bytes DOUBLE,
    sessions_held BIGINT,
    sessions_idle BIGINT
);

CREATE TABLE token_ttl_sweep (
    audit_id VARCHAR NOT NULL,
    run_id INTEGER,
    ttl_s DOUBLE,
    held_byte_seconds DOUBLE,
    freed_byte_seconds DOUBLE,
    freed_share DOUBLE,
    mean_held_bytes DOUBLE,
    peak_held_bytes DOUBLE,
    freed_bytes_at_peak DOUBLE,
    recompute_tokens BIGINT,
    evicted_sessions BIGINT,
    capacity_multiplier DOUBLE,
    memory_bytes BIGINT,
    memory_source VARCHAR,
    active_sessions_fit BIGINT,
    extra_sessions BIGINT
);

CREATE TABLE token_bloat (
    audit_id VARCHAR NOT NULL,
    run_id INTEGER,
    session_id VARCHAR,
    n_calls BIGINT,
    n_pairs BIGINT,
    input_tokens BIGINT,
    cached_input_tokens BIGINT,
    prompt_tokens BIGINT,
    reusable_tokens BIGINT,
    stable_prefix_tokens BIGINT,
    actual_pcer DOUBLE,
    achievable_pcer DOUBLE,
    stable_prefix_pcer DOUBLE,
    token_reason VARCHAR,
    broken_pairs BIGINT,
    diverge_line BIGINT,
    diverge_offset_chars BIGINT,
    diverge_in VARCHAR,
    diverge_context VARCHAR,
    diverge_prev VARCHAR,
    diverge_next VARCHAR
);

CREATE TABLE token_repeats (
    audit_id VARCHAR NOT NULL,
    run_id INTEGER,
    session_id VARCHAR,
    instruction VARCHAR,
    n_turns BIGINT,
    also_in_system BOOLEAN,
    chars BIGINT,
    tokens BIGINT
);
