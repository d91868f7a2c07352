-- Schema version 7: every attention family's cache, measured from a config alone (issue 24).
-- A model may be a KV-faithful replica (MLP/expert widths, expert count, vocab and, where the cache does not
-- depend on it, the hidden width shrunk; or one layer per cache kind): model_build says what was built, as JSON
-- text ({"instantiated": "full model", "shrunk": {}} for the model itself). Older rows keep NULL.

-- Per (seq_len, batch_size): kv_bytes is now every tensor the cache holds (K, V and constant-size states), split
-- here; storage_bytes is what the distinct storages behind them pin (more than kv_bytes when a cached tensor is a
-- view of a larger buffer); expected_kv_bytes comes from runner/core/model_facts.py where it knows the architecture.
ALTER TABLE kv_memory_v2 ADD COLUMN k_bytes BIGINT;
ALTER TABLE kv_memory_v2 ADD COLUMN v_bytes BIGINT;
ALTER TABLE kv_memory_v2 ADD COLUMN state_bytes BIGINT;
ALTER TABLE kv_memory_v2 ADD COLUMN storage_bytes BIGINT;
ALTER TABLE kv_memory_v2 ADD COLUMN expected_source VARCHAR;
ALTER TABLE kv_memory_v2 ADD COLUMN mla_layout VARCHAR;
ALTER TABLE kv_memory_v2 ADD COLUMN layers_built INTEGER;
ALTER TABLE kv_memory_v2 ADD COLUMN model_build VARCHAR;
ALTER TABLE kv_memory_v2 ADD COLUMN transformers_version VARCHAR;

-- Per layer: its cache kind (full, sliding, chunked, mla_latent, mla_per_head, linear_state, mamba_state, none),
-- the class transformers used, state bytes beside K and V, the formula's bytes for that layer, and which built
-- layer was measured for it (itself, or the built layer of the same kind in a one-layer-per-kind replica).
ALTER TABLE kv_per_layer ADD COLUMN kind VARCHAR;
ALTER TABLE kv_per_layer ADD COLUMN layer_class VARCHAR;
ALTER TABLE kv_per_layer ADD COLUMN state_bytes BIGINT;
ALTER TABLE kv_per_layer ADD COLUMN expected_bytes BIGINT;
ALTER TABLE kv_per_layer ADD COLUMN match BOOLEAN;
ALTER TABLE kv_per_layer ADD COLUMN measured_as_layer INTEGER;

-- The crossover on the real curve: a cache that stops growing (windows, constant states) may never reach the
-- weights; note says so. model_build as above for the measured row.
ALTER TABLE kv_crossover_v3 ADD COLUMN note VARCHAR;
ALTER TABLE kv_crossover_v3 ADD COLUMN model_build VARCHAR;

-- How many requests of a given length fit beside the weights on one GPU of a given size: analytic (source is
-- always 'formula'), from runner/core/model_facts.py's cache in transformers' layout and its paged-engine view.
CREATE TABLE kv_fits_formula (
    run_id INTEGER NOT NULL,
    model VARCHAR,
    source VARCHAR,
    dtype VARCHAR,
    gpu_gb INTEGER,
    tp INTEGER,
    seq_len BIGINT,
    weight_bytes BIGINT,
    cache_bytes_per_request BIGINT,
    requests_transformers BIGINT,
    engine_bytes_per_request BIGINT,
    requests_engine BIGINT,
    rules VARCHAR
);
