-- Schema version 6: per-call rows stored narrow (issue 12). An audit of a million calls wrote a million
-- copies of the same few strings (the file's path, the format, the provider, the models, where the prices
-- came from): writing those strings was a quarter of a whole audit's time. Each distinct combination is now
-- one row of token_call_labels, and each call's row in token_call_rows points at it by label_id.
-- token_calls is a view with exactly the columns and values the table had, so queries of it keep working.

-- One row per distinct (source, format, provider, models, system-token source, price source and date) of
-- an audit's calls. label_id counts from 1 within each audit.
CREATE TABLE token_call_labels (
    audit_id VARCHAR NOT NULL,
    run_id INTEGER,
    label_id INTEGER NOT NULL,
    source VARCHAR,
    format VARCHAR,
    provider_name VARCHAR,
    request_model VARCHAR,
    response_model VARCHAR,
    system_tokens_source VARCHAR,
    price_source VARCHAR,
    price_snapshot_date DATE
);

-- One row per audited call: its numbers, and its label.
CREATE TABLE token_call_rows (
    audit_id VARCHAR NOT NULL,
    run_id INTEGER,
    label_id INTEGER,
    line BIGINT,
    session_id VARCHAR,
    start_time TIMESTAMP,
    end_time TIMESTAMP,
    disconnected_at TIMESTAMP,
    input_tokens BIGINT,
    cached_input_tokens BIGINT,
    cache_creation_input_tokens BIGINT,
    output_tokens BIGINT,
    system_tokens BIGINT,
    input_cost_usd DOUBLE,
    cache_read_cost_usd DOUBLE,
    cache_write_cost_usd DOUBLE,
    output_cost_usd DOUBLE,
    cost_usd DOUBLE
);

-- The calls stored so far move over: their labels first (numbered in a fixed order), then the rows.
INSERT INTO token_call_labels
SELECT audit_id, run_id,
       row_number() OVER (PARTITION BY audit_id ORDER BY source NULLS FIRST, format NULLS FIRST,
                          provider_name NULLS FIRST, request_model NULLS FIRST, response_model NULLS FIRST,
                          system_tokens_source NULLS FIRST, price_source NULLS FIRST,
                          price_snapshot_date NULLS FIRST) AS label_id,
       source, format, provider_name, request_model, response_model, system_tokens_source, price_source,
       price_snapshot_date
FROM (SELECT DISTINCT audit_id, run_id, source, format, provider_name, request_model, response_model,
                      system_tokens_source, price_source, price_snapshot_date FROM token_calls);

INSERT INTO token_call_rows
SELECT c.audit_id, c.run_id, l.label_id, c.line, c.session_id, c.start_time, c.end_time, c.disconnected_at,
       c.input_tokens, c.cached_input_tokens, c.cache_creation_input_tokens, c.output_tokens, c.system_tokens,
       c.input_cost_usd, c.cache_read_cost_usd, c.cache_write_cost_usd, c.output_cost_usd, c.cost_usd
FROM token_calls c
JOIN token_call_labels l
  ON l.audit_id = c.audit_id AND l.run_id IS NOT DISTINCT FROM c.run_id
 AND l.source IS NOT DISTINCT FROM c.source AND l.format IS NOT DISTINCT FROM c.format
 AND l.provider_name IS NOT DISTINCT FROM c.provider_name
 AND l.request_model IS NOT DISTINCT FROM c.request_model
 AND l.response_model IS NOT DISTINCT FROM c.response_model
 AND l.system_tokens_source IS NOT DISTINCT FROM c.system_tokens_source
 AND l.price_source IS NOT DISTINCT FROM c.price_source
 AND l.price_snapshot_date IS NOT DISTINCT FROM c.price_snapshot_date;

DROP TABLE token_calls;

-- The calls as they always read: the same columns, in the same order. (An audit in progress shadows this
-- with a temporary view of its own calls; see runner/audit/sql/move.sql.)
CREATE VIEW token_calls AS
SELECT r.audit_id, r.run_id, l.source, r.line, l.format, r.session_id, r.start_time, r.end_time,
       r.disconnected_at, l.provider_name, l.request_model, l.response_model, r.input_tokens,
       r.cached_input_tokens, r.cache_creation_input_tokens, r.output_tokens, r.system_tokens,
       l.system_tokens_source, r.input_cost_usd, r.cache_read_cost_usd, r.cache_write_cost_usd,
       r.output_cost_usd, r.cost_usd, l.price_source, l.price_snapshot_date
FROM token_call_rows r
LEFT JOIN token_call_labels l ON l.audit_id = r.audit_id AND l.label_id = r.label_id;
