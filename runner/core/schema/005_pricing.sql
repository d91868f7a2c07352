-- Schema version 5: the bill in dollars (issue 18). Every audited call priced from its provider and model,
-- the rates it was priced with (and where they came from), the what-if savings of prefix caching, and the
-- self-hosted view (idle KV memory in GPU-hours and dollars). Costs are US dollars; NULL means unpriced
-- (a model no price table knows), never zero.

-- Per call, beside its token counts, with where its rates came from. input_cost_usd is the UNCACHED input
-- only (input_tokens minus cache reads and writes: token_calls.input_tokens counts all input, the
-- OpenTelemetry convention).
ALTER TABLE token_calls ADD COLUMN input_cost_usd DOUBLE;
ALTER TABLE token_calls ADD COLUMN cache_read_cost_usd DOUBLE;
ALTER TABLE token_calls ADD COLUMN cache_write_cost_usd DOUBLE;
ALTER TABLE token_calls ADD COLUMN output_cost_usd DOUBLE;
ALTER TABLE token_calls ADD COLUMN cost_usd DOUBLE;
ALTER TABLE token_calls ADD COLUMN price_source VARCHAR;
ALTER TABLE token_calls ADD COLUMN price_snapshot_date DATE;

-- Per session: the sum over its priced calls, and how many calls could not be priced.
ALTER TABLE token_audit ADD COLUMN cost_usd DOUBLE;
ALTER TABLE token_audit ADD COLUMN unpriced_calls BIGINT;

-- Per audit: totals, where the prices came from, the what-if of prefix caching, the self-hosted view.
ALTER TABLE audits ADD COLUMN cost_usd DOUBLE;
ALTER TABLE audits ADD COLUMN input_cost_usd DOUBLE;
ALTER TABLE audits ADD COLUMN cache_read_cost_usd DOUBLE;
ALTER TABLE audits ADD COLUMN cache_write_cost_usd DOUBLE;
ALTER TABLE audits ADD COLUMN output_cost_usd DOUBLE;
ALTER TABLE audits ADD COLUMN priced_calls BIGINT;
ALTER TABLE audits ADD COLUMN unpriced_calls BIGINT;
ALTER TABLE audits ADD COLUMN unpriced_models VARCHAR;
ALTER TABLE audits ADD COLUMN price_source VARCHAR;
ALTER TABLE audits ADD COLUMN price_snapshot_date DATE;
ALTER TABLE audits ADD COLUMN whatif_calls BIGINT;
ALTER TABLE audits ADD COLUMN whatif_nocache_usd DOUBLE;
ALTER TABLE audits ADD COLUMN whatif_actual_usd DOUBLE;
ALTER TABLE audits ADD COLUMN whatif_achievable_usd DOUBLE;
ALTER TABLE audits ADD COLUMN whatif_stable_usd DOUBLE;
ALTER TABLE audits ADD COLUMN whatif_achievable_pcer DOUBLE;
ALTER TABLE audits ADD COLUMN whatif_stable_pcer DOUBLE;
ALTER TABLE audits ADD COLUMN whatif_reason VARCHAR;
ALTER TABLE audits ADD COLUMN gpu_hour_price_usd DOUBLE;
ALTER TABLE audits ADD COLUMN idle_gpu_hours DOUBLE;
ALTER TABLE audits ADD COLUMN idle_cost_usd DOUBLE;
ALTER TABLE audits ADD COLUMN gpu_cost_reason VARCHAR;

-- Per TTL of the sweep: what the freed KV byte-seconds are worth at --gpu-hour-price.
ALTER TABLE token_ttl_sweep ADD COLUMN freed_gpu_hours DOUBLE;
ALTER TABLE token_ttl_sweep ADD COLUMN freed_cost_usd DOUBLE;

-- The rates each audit used: one row per (provider, model as logged, price period, input-size tier), looked
-- up once; every call's cost is SQL arithmetic on one of these rows. A model no price table knows has one
-- row with NULL rates and unknown_reason: counted and listed, never guessed. Rates in USD per million
-- tokens; request_usd is a fixed fee per call (0 for most models). valid_from/valid_to NULL: open-ended.
-- A call is in a tier when above_input_tokens < input_tokens <= upto_input_tokens (NULL: no bound).
CREATE TABLE token_prices (
    audit_id VARCHAR NOT NULL,
    run_id INTEGER,
    provider_name VARCHAR,
    model VARCHAR,
    valid_from TIMESTAMP,
    valid_to TIMESTAMP,
    above_input_tokens BIGINT,
    upto_input_tokens BIGINT,
    input_usd_mtok DOUBLE,
    cache_read_usd_mtok DOUBLE,
    cache_write_usd_mtok DOUBLE,
    output_usd_mtok DOUBLE,
    request_usd DOUBLE,
    price_source VARCHAR,
    snapshot_date DATE,
    matched_provider VARCHAR,
    matched_model VARCHAR,
    unknown_reason VARCHAR,
    n_calls BIGINT,
    input_tokens BIGINT,
    cached_input_tokens BIGINT,
    cache_creation_input_tokens BIGINT,
    output_tokens BIGINT,
    cost_usd DOUBLE
);
